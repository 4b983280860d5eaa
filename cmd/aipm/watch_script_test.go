package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// [!] waitfor GLOB [REGEXP] waits until a file matching GLOB exists (and
// holds a match of REGEXP); with !, until none does. It fails after a
// generous bound, never on wall time otherwise: the scripts of processes
// started by aipm watch wait on files.
func cmdWaitFor(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: waitfor [!] GLOB [REGEXP]")
	}
	var re *regexp.Regexp
	if len(args) == 2 {
		re = regexp.MustCompile(args[1])
	}
	found := func() bool {
		matches, _ := filepath.Glob(ts.MkAbs(args[0]))
		for _, m := range matches {
			if re == nil {
				return true
			}
			if data, err := os.ReadFile(m); err == nil && re.Match(data) {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(60 * time.Second)
	for found() == neg {
		if time.Now().After(deadline) {
			ts.Fatalf("waitfor %v: gave up", args)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// handedit FILE KEY VALUE sets a top-level string field of a JSON document
// the way an editor saves: a new file renamed over the old one.
func cmdHandEdit(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: handedit FILE KEY VALUE")
	}
	path := ts.MkAbs(args[0])
	data, err := os.ReadFile(path)
	ts.Check(err)
	var doc map[string]any
	ts.Check(json.Unmarshal(data, &doc))
	doc[args[1]] = args[2]
	data, err = json.MarshalIndent(doc, "", "  ")
	ts.Check(err)
	ts.Check(os.WriteFile(path+".swp", append(data, '\n'), 0o644))
	ts.Check(os.Rename(path+".swp", path))
}
