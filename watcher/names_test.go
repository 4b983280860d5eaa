package watcher

import (
	"aipm/fsstore"
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestNoLayoutNames: the watcher names no file of .ai-pm/ itself; it asks
// the store (fsstore) for every path and for what a change means
// (QuietChange, UnwatchedDir). The names are those of a project the
// watcher runs on, as the storage lays it out.
func TestNoLayoutNames(t *testing.T) {
	names := layoutNames(t)
	for _, want := range []string{"config.toml", "chat.jsonl", "read.json", "watcher.lock", "watcher.json", "logs", "pending", ".lock"} {
		if !slices.Contains(names, want) {
			t.Fatalf("the layout's names %q lack %s: layoutNames no longer finds what a project holds", names, want)
		}
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		for _, lit := range pathLiterals(t, f) {
			for _, n := range names {
				if namesFile(lit.value, n) {
					t.Errorf("%s:%d: %q names %s of .ai-pm: ask the store's Layout instead", f, lit.line, lit.value, n)
				}
			}
		}
	}
}

// namesFile says whether the string literal v names n: is it, ends with
// it when n is a suffix (".lock"), or holds it as a path element.
func namesFile(v, n string) bool {
	return v == n || strings.HasPrefix(n, ".") && strings.HasSuffix(v, n) ||
		strings.HasPrefix(v, n+"/") || strings.Contains(v, "/"+n)
}

// layoutNames are the names of what lives under .ai-pm/ (agents' and
// ids' own names taken out: "coder.passkey" is ".passkey", a task's
// document is not a name): the paths the Layout gives, and what a project
// holds once agents talked, a task started and the watcher took its lock.
func layoutNames(t *testing.T) []string {
	t.Helper()
	p := newProject(t, "", nil)
	ctx := context.Background()
	p.send("lead", "coder", "hello")
	if _, _, err := p.store.Unread(ctx, "coder", 10, false); err != nil {
		t.Fatal(err)
	}
	p.startedTask("coder")
	release, err := p.store.LockWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer release()

	root := p.store.Root()
	var paths []string
	err = filepath.WalkDir(root, func(path string, _ fs.DirEntry, err error) error {
		paths = append(paths, path)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	paths = append(paths, p.store.ConfigPath())
	for _, c := range []string{fsstore.Conversations, fsstore.Delegations, fsstore.Tasks, fsstore.Sessions, fsstore.Pending, fsstore.Runs} {
		paths = append(paths, p.store.CollectionDir(c))
	}
	for _, c := range []string{fsstore.Pending, fsstore.Runs} {
		path, err := p.store.TriggerPath(c, "coder", fsstore.PurposeTask)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	for _, of := range []func(string) (string, error){p.store.ChatPath, p.store.NotificationsPath, p.store.PasskeyPath, p.store.LogDir, p.store.CredentialPath} {
		path, err := of("coder")
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}

	agents := []string{"lead", "coder", "reviewer"}
	id := regexp.MustCompile(`^[a-z]+_[0-9A-Za-z]+`)
	var names []string
	for _, path := range paths {
		rel, err := filepath.Rel(root, path)
		if err != nil || rel == "." {
			continue
		}
		for _, n := range strings.Split(filepath.ToSlash(rel), "/") {
			for _, a := range agents {
				n = strings.ReplaceAll(n, a, "")
			}
			if n != "" && !id.MatchString(strings.TrimPrefix(n, ".")) && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	t.Logf("the layout's names: %q", names)
	return names
}

type literal struct {
	value string
	line  int
}

// pathLiterals are the string literals of file that could be a path: all
// but imports and what a log line says (its message and attribute keys are
// words for a human).
func pathLiterals(t *testing.T, file string) []literal {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []literal
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ImportSpec:
			return false
		case *ast.CallExpr:
			if logCall(n) {
				for _, a := range n.Args {
					if _, ok := a.(*ast.BasicLit); !ok {
						ast.Inspect(a, func(m ast.Node) bool { return collect(fset, m, &out) })
					}
				}
				return false
			}
		}
		return collect(fset, n, &out)
	})
	return out
}

// logCall says whether call is x.log.Debug/Info/Warn/Error.
func logCall(call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || !slices.Contains([]string{"Debug", "Info", "Warn", "Error"}, sel.Sel.Name) {
		return false
	}
	x, ok := sel.X.(*ast.SelectorExpr)
	return ok && x.Sel.Name == "log"
}

func collect(fset *token.FileSet, n ast.Node, out *[]literal) bool {
	if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
		if v, err := strconv.Unquote(lit.Value); err == nil {
			*out = append(*out, literal{v, fset.Position(lit.Pos()).Line})
		}
	}
	return true
}
