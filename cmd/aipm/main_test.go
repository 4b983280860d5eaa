package main

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"aipm/fsstore"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"aipm": func() { os.Exit(mainExit()) }})
}

// TestScripts runs testdata/script/*.txtar: the CLI's behaviour, one
// command per script. UPDATE_SCRIPTS=1 rewrites cmp targets.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("..", "..", "testdata", "script"),
		RequireExplicitExec: true,
		UpdateScripts:       os.Getenv("UPDATE_SCRIPTS") == "1",
		Setup: func(e *testscript.Env) error {
			e.Setenv("AIPM_DIR", "")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"tear":               cmdTear,
			"jsonl-count":        cmdJSONLCount,
			"tree-save":          cmdTreeSave,
			"tree-same":          cmdTreeSame,
			"setenv-from-stdout": cmdSetenvFromStdout,
			"repeat-file":        cmdRepeatFile,
		},
	})
}

// tear FILE N cuts N bytes off the end of FILE, as a writer killed mid-line
// leaves it (txtar files always end in a newline).
func cmdTear(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: tear FILE N")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	path := ts.MkAbs(args[0])
	data, err := os.ReadFile(path)
	ts.Check(err)
	ts.Check(os.WriteFile(path, data[:len(data)-n], 0o644))
}

// jsonl-count FILE N: FILE has exactly N complete valid lines.
func cmdJSONLCount(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: jsonl-count FILE N")
	}
	want, err := strconv.Atoi(args[1])
	ts.Check(err)
	recs, _, _, err := fsstore.ReadAll(ts.MkAbs(args[0]))
	ts.Check(err)
	if (len(recs) == want) == neg {
		ts.Fatalf("%s has %d valid lines; want %s%d", args[0], len(recs), map[bool]string{true: "not ", false: ""}[neg], want)
	}
}

// tree-save NAME records a digest of every file under .ai-pm (lock files
// aside); tree-same NAME fails if anything changed since.
func cmdTreeSave(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: tree-save NAME")
	}
	ts.Setenv("TREE_"+args[0], treeDigest(ts))
}

func cmdTreeSame(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: tree-same NAME")
	}
	same := ts.Getenv("TREE_"+args[0]) == treeDigest(ts)
	if same == neg {
		ts.Fatalf(".ai-pm changed=%v since tree-save %s", !same, args[0])
	}
}

// setenv-from-stdout NAME REGEXP sets $NAME to the first submatch of
// REGEXP (multi-line mode) in the last command's stdout, e.g. a new task id.
func cmdSetenvFromStdout(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: setenv-from-stdout NAME REGEXP")
	}
	re, err := regexp.Compile("(?m)" + args[1])
	ts.Check(err)
	m := re.FindStringSubmatch(ts.ReadFile("stdout"))
	if len(m) < 2 {
		ts.Fatalf("no match for %q (with a submatch) in stdout", args[1])
	}
	ts.Setenv(args[0], m[1])
}

// repeat-file FILE N TEXT writes TEXT N times to FILE, with no newline
// (long message content). A TEXT in double quotes is unquoted as a Go
// string first, so '"\xff"' writes an invalid UTF-8 byte.
func cmdRepeatFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: repeat-file FILE N TEXT")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	text := args[2]
	if strings.HasPrefix(text, `"`) {
		text, err = strconv.Unquote(text)
		ts.Check(err)
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(strings.Repeat(text, n)), 0o644))
}

func treeDigest(ts *testscript.TestScript) string {
	root := ts.MkAbs(fsstore.DirName)
	var lines []string
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() == ".lock" {
			return nil
		}
		fi, _ := d.Info()
		entry := fmt.Sprintf("%s %v", strings.TrimPrefix(path, root), fi.Mode())
		if !d.IsDir() {
			data, _ := os.ReadFile(path)
			entry += fmt.Sprintf(" %x", sha256.Sum256(data))
		}
		lines = append(lines, entry)
		return nil
	})
	sort.Strings(lines)
	return fmt.Sprintf("%x", sha256.Sum256([]byte(strings.Join(lines, "\n"))))
}
