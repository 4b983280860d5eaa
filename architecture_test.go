package aipm

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestArchitectureTrue holds ARCHITECTURE.md to the code: every file or
// directory it names exists, and every name it gives as a rule's home
// (`file.go` (`Name`, `Type.method`), or `package.Name`) is in that file or
// package.
func TestArchitectureTrue(t *testing.T) {
	data, err := os.ReadFile("ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
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
				files, _ := filepath.Glob("*/*_test.go")
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
