package clients

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNoClientNamesOutside: no package but a client's own folder
// (internal/clients/<name>, for every registered client) compares with or
// switches on a registered client's name (a client is one place): the
// non-test Go of the module, this registry and clientkit included, is
// searched for `x == "claude"`, `!=`, and `case "claude":`.
func TestNoClientNamesOutside(t *testing.T) {
	root := filepath.Join("..", "..")
	names := map[string]bool{}
	own := map[string]bool{} // each client's folder
	for _, n := range Names() {
		names[n] = true
		own[filepath.Join("internal", "clients", n)] = true
	}
	isName := func(e ast.Expr) bool {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return false
		}
		s, err := strconv.Unquote(lit.Value)
		return err == nil && names[s]
	}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "third_party" || own[rel] || strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "node_modules" || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		inspectNames(t, rel, f, isName)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// inspectNames reports each comparison with, and case of, a client's
// name (isName) in f, the file rel.
func inspectNames(t *testing.T, rel string, f *ast.File, isName func(ast.Expr) bool) {
	t.Helper()
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BinaryExpr:
			if (n.Op == token.EQL || n.Op == token.NEQ) && (isName(n.X) || isName(n.Y)) {
				t.Errorf("%s compares with a client's name: ask internal/clients (Get, a Client's parts)", rel)
			}
		case *ast.CaseClause:
			for _, e := range n.List {
				if isName(e) {
					t.Errorf("%s switches on a client's name: ask internal/clients (Get, a Client's parts)", rel)
				}
			}
		}
		return true
	})
}
