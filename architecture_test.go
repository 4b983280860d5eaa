package aipm

import (
	"bufio"
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"aipm/internal/testenv"
)

// TestArchitectureTrue holds ARCHITECTURE.md to the code: the block of
// imports and the package table name every package of the module (go
// list) once, the block with exactly the imports each has; every file or
// directory the page names exists, and every name it gives as a rule's
// home (`file.go` (`Name`, `Type.method`), or `package.Name`) is in that
// file or package.
func TestArchitectureTrue(t *testing.T) {
	data, err := os.ReadFile("ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("names", func(t *testing.T) { checkNames(t, data) })
	pkgs := listPackages(t) // skips the rest where go is missing
	t.Run("imports", func(t *testing.T) { checkImportBlock(t, string(data), pkgs) })
	t.Run("packages", func(t *testing.T) { checkPackageTable(t, string(data), pkgs) })
}

// checkNames checks that every path ARCHITECTURE.md names exists, and every
// name it gives as a home is declared there.
func checkNames(t *testing.T, data []byte) {
	ticked := regexp.MustCompile("`([^`]+)`")
	ident := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)
	for n, line := range strings.Split(string(data), "\n") {
		at := func(format string, args ...any) {
			t.Helper()
			t.Errorf("ARCHITECTURE.md:%d: "+format, append([]any{n + 1}, args...)...)
		}
		file := "" // the last Go file the line named: the home of the names after it
		for _, m := range ticked.FindAllStringSubmatch(line, -1) {
			item := m[1]
			switch {
			case isRepoPath(item):
				if _, err := os.Stat(strings.TrimSuffix(item, "/")); err != nil {
					at("%s does not exist", item)
				}
				if strings.HasSuffix(item, ".go") {
					file = item
				} else {
					file = ""
				}
			case packageDirs[item] != "" || item == "aipm":
				// a package's name, not a home
			case strings.HasPrefix(item, "Test") && ident.MatchString(item):
				files, _ := filepath.Glob("*_test.go")
				below, _ := filepath.Glob("*/*_test.go")
				files = append(files, below...)
				more, _ := filepath.Glob("*/*/*_test.go")
				deeper, _ := filepath.Glob("*/*/*/*_test.go")
				more = append(more, deeper...)
				if !declares(append(files, more...), item) {
					at("no test is named %s", item)
				}
			case ident.MatchString(item):
				// pkg.Name names a package's; any other name, after a
				// file, the package of that file (a row's prose may name
				// the callers beside the home).
				var files []string
				if pkg, name, ok := strings.Cut(item, "."); ok && packageDirs[pkg] != "" {
					files, _ = filepath.Glob(filepath.Join(packageDirs[pkg], "*.go"))
					item = name
				} else if file != "" {
					files, _ = filepath.Glob(filepath.Join(filepath.Dir(file), "*.go"))
				} else {
					continue // a word of a format or a command, not a home
				}
				if !declares(files, lastPart(item)) {
					at("%s is not declared where the line says (%s)", m[1], filepath.Dir(files0(files, file)))
				}
			}
		}
	}
}

// packageDirs are the module's packages an ARCHITECTURE.md name may be
// qualified with, and where they are.
var packageDirs = map[string]string{
	"fsstore":    "fsstore",
	"storage":    "fsstore/internal/storage",
	"lockedfile": "internal/lockedfile",
	"mcpserver":  "mcpserver",
	"hook":       "hook",
	"watcher":    "watcher",
	"web":        "web",
	"wake":       "wake",
}

// isRepoPath says whether a ticked item names a file or directory of the
// repository (a Go or Markdown file, or a path with a slash and no space).
func isRepoPath(item string) bool {
	if strings.ContainsAny(item, " *<>{}$=") || strings.HasPrefix(item, ".ai-pm") || strings.HasPrefix(item, "/") || strings.HasPrefix(item, "agents/") {
		return false
	}
	for _, top := range []string{"cmd/", "fsstore/", "mcpserver/", "watcher/", "hook/", "web/", "wake/", "sim/", "internal/", "docs/", "testdata/"} {
		if strings.HasPrefix(item, top) {
			return true
		}
	}
	return false
}

func lastPart(name string) string { return name[strings.LastIndex(name, ".")+1:] }

// declares says whether one of files declares name: a func, method, type,
// var, const or struct field of that name.
func declares(files []string, name string) bool {
	decl := regexp.MustCompile(`(?m)(^func (\([^)]*\) )?` + name + `\b|^type ` + name + `\b|^(var|const) ` + name + `\b|^\t` + name + `\b)`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") && !strings.HasPrefix(name, "Test") {
			continue
		}
		data, err := os.ReadFile(f)
		if err == nil && decl.Match(data) {
			return true
		}
	}
	return false
}

func files0(files []string, file string) string {
	if len(files) > 0 {
		return files[0]
	}
	return file
}

// modulePath is the module's path: go.mod's module line.
const modulePath = "aipm"

// outsideModules are the short names ARCHITECTURE.md's block of imports
// gives the modules from outside this one (a name covers every package of
// its module path).
var outsideModules = map[string]string{
	"cobra":              "github.com/spf13/cobra",
	"pflag":              "github.com/spf13/pflag",
	"toml":               "github.com/BurntSushi/toml",
	"gjson":              "github.com/tidwall/gjson",
	"x/sys":              "golang.org/x/sys",
	"x/text":             "golang.org/x/text",
	"fsnotify":           "github.com/fsnotify/fsnotify",
	"the MCP SDK":        "github.com/modelcontextprotocol/go-sdk",
	"chromedp":           "github.com/chromedp",
	"jsonschema-go":      "github.com/google/jsonschema-go",
	"segmentio/encoding": "github.com/segmentio/encoding",
}

// pkgImports is what one package of the module imports (its non-test
// files): the module's packages, and the short names of outside modules.
type pkgImports struct {
	mine, outside []string
}

// listPackages asks go list for every package of the module and what it
// imports, by ARCHITECTURE.md's names: a package's path in the module
// ("aipm" for the root), an outside module's short name.
func listPackages(t *testing.T) map[string]pkgImports {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		testenv.SkipMissing(t, "go on PATH (to list the module's packages)")
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	pkgs := map[string]pkgImports{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		path, imports, _ := strings.Cut(sc.Text(), "\t")
		var p pkgImports
		for _, imp := range strings.Fields(imports) {
			if name, ok := inModule(imp); ok {
				p.mine = append(p.mine, name)
			} else if name := outsideName(imp); name != "" {
				p.outside = append(p.outside, name)
			} else if strings.Contains(strings.Split(imp, "/")[0], ".") {
				t.Errorf("%s imports %s, a module the test gives no name: add it to outsideModules and to ARCHITECTURE.md's block", path, imp)
			}
		}
		name, _ := inModule(path)
		pkgs[name] = pkgImports{mine: sortedSet(p.mine), outside: sortedSet(p.outside)}
	}
	if len(pkgs) == 0 {
		t.Fatal("go list ./... listed no package")
	}
	return pkgs
}

// inModule is path's name in ARCHITECTURE.md if it is a package of this
// module.
func inModule(path string) (string, bool) {
	if path == modulePath {
		return path, true
	}
	rest, ok := strings.CutPrefix(path, modulePath+"/")
	return rest, ok
}

// outsideName is the short name of the outside module path belongs to, or
// "" (the standard library, or a module the test does not know).
func outsideName(path string) string {
	for name, module := range outsideModules {
		if path == module || strings.HasPrefix(path, module+"/") {
			return name
		}
	}
	return ""
}

func sortedSet(names []string) []string {
	slices.Sort(names)
	return slices.Compact(names)
}

// section is the text of ARCHITECTURE.md from the heading that starts
// with title to the next heading.
func section(t *testing.T, doc, title string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "\n## "+title)
	if !ok {
		t.Fatalf("ARCHITECTURE.md has no heading ## %s", title)
	}
	if end := strings.Index(rest, "\n## "); end >= 0 {
		rest = rest[:end]
	}
	return rest
}

// checkImportBlock holds the block of imports to pkgs: one line a package,
// "PACKAGE ─► MINE, ...; OUTSIDE, ...", exactly its imports.
func checkImportBlock(t *testing.T, doc string, pkgs map[string]pkgImports) {
	text := section(t, doc, "Packages, and the direction of imports")
	_, block, _ := strings.Cut(text, "```\n")
	block, _, ok := strings.Cut(block, "```")
	if !ok {
		t.Fatal("ARCHITECTURE.md: no block of imports (```) under ## Packages")
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		from, to, ok := strings.Cut(line, "─►")
		from = strings.TrimSpace(from)
		if !ok || from == "" {
			t.Errorf("ARCHITECTURE.md: %q is not PACKAGE ─► IMPORTS", line)
			continue
		}
		want, known := pkgs[from]
		switch {
		case !known:
			t.Errorf("ARCHITECTURE.md's block names %s, which is no package of the module", from)
			continue
		case seen[from]:
			t.Errorf("ARCHITECTURE.md's block names %s twice", from)
		}
		seen[from] = true
		mine, outside, _ := strings.Cut(to, ";")
		if got := sortedSet(names(mine)); !slices.Equal(got, want.mine) {
			t.Errorf("ARCHITECTURE.md: %s ─► %v, but it imports %v", from, got, want.mine)
		}
		if got := sortedSet(names(outside)); !slices.Equal(got, want.outside) {
			t.Errorf("ARCHITECTURE.md: %s imports from outside the module %v, but it imports %v", from, got, want.outside)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(pkgs)) {
		if !seen[p] {
			t.Errorf("ARCHITECTURE.md's block of imports does not name %s (it imports %v; %v)", p, pkgs[p].mine, pkgs[p].outside)
		}
	}
}

// names splits a comma-separated list, dropping blanks.
func names(list string) []string {
	var out []string
	for _, n := range strings.Split(list, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// checkPackageTable holds the table under the block to pkgs: one row a
// package, with its job.
func checkPackageTable(t *testing.T, doc string, pkgs map[string]pkgImports) {
	text := section(t, doc, "Packages, and the direction of imports")
	_, table, ok := strings.Cut(text, "| package | its one job |\n")
	if !ok {
		t.Fatal("ARCHITECTURE.md: no table | package | its one job | under ## Packages")
	}
	row := regexp.MustCompile("^\\| `([^`]+)` \\| (.+) \\|$")
	seen := map[string]bool{}
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "|") {
			break
		}
		if strings.HasPrefix(line, "| ---") {
			continue
		}
		m := row.FindStringSubmatch(line)
		switch {
		case m == nil:
			t.Errorf("ARCHITECTURE.md: the row %.60q is not | `package` | its job |", line)
		case !hasPackage(pkgs, m[1]):
			t.Errorf("ARCHITECTURE.md's table has a row for %s, which is no package of the module", m[1])
		case seen[m[1]]:
			t.Errorf("ARCHITECTURE.md's table has two rows for %s", m[1])
		default:
			seen[m[1]] = true
		}
	}
	for _, p := range slices.Sorted(maps.Keys(pkgs)) {
		if !seen[p] {
			t.Errorf("ARCHITECTURE.md's table has no row for %s: say its one job", p)
		}
	}
}

func hasPackage(pkgs map[string]pkgImports, name string) bool {
	_, ok := pkgs[name]
	return ok
}
