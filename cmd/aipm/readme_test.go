package main

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"aipm/mcpserver"
)

// The README's commands run as printed. The convention (README.md):
//
//   - every line of a ```sh block is a command, run by bash in one
//     throw-away project directory, in the order of the README, each
//     expected to exit 0; a line ending in a backslash continues on the
//     next; a # comment after a command is the shell's;
//   - a block right after a line "<!-- not run: WHY -->" is not run (the
//     test command itself, installs, commands that start a model's CLI or
//     run until Ctrl-C, commands that need an id printed earlier);
//   - "go run ./cmd/aipm" runs the aipm under test, which is on PATH as
//     aipm, as are all other aipm commands.
//
// Other blocks (```text, ```toml, ```) are not commands.

// readmeCommands returns the commands of markdown text, as the
// convention above says.
func readmeCommands(text string) []string {
	var cmds []string
	var prev string // the last non-empty line before a fence
	inBlock, run := false, false
	var cont strings.Builder
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case !inBlock && strings.HasPrefix(trimmed, "```"):
			inBlock = true
			run = trimmed == "```sh" && !strings.HasPrefix(prev, "<!-- not run")
		case inBlock && trimmed == "```":
			inBlock = false
		case inBlock && run && trimmed != "":
			if strings.HasSuffix(trimmed, `\`) {
				cont.WriteString(strings.TrimSpace(strings.TrimSuffix(trimmed, `\`)) + " ")
				continue
			}
			cont.WriteString(trimmed)
			cmd := cont.String()
			cont.Reset()
			if rest, ok := strings.CutPrefix(cmd, "go run ./cmd/aipm "); ok {
				cmd = "aipm " + rest
			}
			cmds = append(cmds, cmd)
		}
		if trimmed != "" && !inBlock {
			prev = trimmed
		}
	}
	return cmds
}

func TestReadmeCommandsConvention(t *testing.T) {
	md := "<!-- not run: no -->\n```sh\nrm -rf /\n```\n\n```sh\ngo run ./cmd/aipm demo\naipm task add x \\\n  --assignee coder   # why\n```\n```text\nnot a command\n```\n"
	got := strings.Join(readmeCommands(md), "\n")
	want := "aipm demo\naipm task add x --assignee coder   # why"
	if got != want {
		t.Fatalf("commands:\n%s\nwant:\n%s", got, want)
	}
}

// TestReadme runs README.md's commands as printed, with the aipm under
// test on PATH, in a throw-away project and home directory; and checks the
// facts the README repeats from elsewhere: the test command is the one
// .ci/run runs, the Go version is go.mod's, and it stays short.
func TestReadme(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile(filepath.Join("..", "..", ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	_, testCmd, _ := strings.Cut(string(ci), "# The README's test command:\n")
	testCmd, _, _ = strings.Cut(testCmd, "\n")
	if testCmd == "" || !strings.Contains(string(readme), "```sh\n"+testCmd+"\n```") {
		t.Errorf("README.md does not show .ci/run's test command %q in a ```sh block of its own", testCmd)
	}
	if strings.Contains(testCmd, "-race") && !strings.Contains(string(readme), "C compiler") {
		t.Errorf("README.md's test command has -race, which needs cgo: say that it needs a C compiler")
	}
	gomod, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(gomod)
	if m == nil || !strings.Contains(string(readme), "with Go "+string(m[1])+" or later") {
		t.Errorf("README.md does not say the Go version go.mod names (with Go %s or later)", m[1])
	}

	if n := strings.Count(string(readme), "\n"); n > 150 {
		t.Errorf("README.md has %d lines: keep it to 150 and move the rest to docs/", n)
	}

	cmds := readmeCommands(string(readme))
	if len(cmds) < 10 {
		t.Fatalf("README.md has %d commands to run; the convention is described in readme_test.go", len(cmds))
	}
	var script strings.Builder
	script.WriteString("mkdir home project\ncd project\n")
	teamEnd := -1 // the team path's last command: the one after its aipm watch
	for i, c := range cmds {
		script.WriteString("# README: " + c + "\n")
		script.WriteString("exec bash -c '" + strings.ReplaceAll(c, "'", "''") + "'\n")
		if teamEnd < 0 && i > 0 && strings.HasPrefix(cmds[i-1], "aipm watch --until-idle") {
			// The team path ends with what the agent said: its report of
			// the task, to the human who asked for it.
			teamEnd = i
			script.WriteString("# the README's team path ends with what coder said\n" +
				"stdout '\\[system\\] coder: Task tsk_\\S+ \"Write the tokenizer\" is done \\(coder reported success\\): did \"Write the tokenizer\" in \\d+ steps$'\n")
		}
	}
	if teamEnd < 0 || !strings.HasPrefix(cmds[teamEnd], "aipm inbox") {
		t.Errorf("README.md's team path (\"A team of real agents\") does not end, after its aipm watch --until-idle, with aipm inbox, which shows what the agent said")
	}
	// The team path ("A team of real agents") did what it says: the
	// watcher started coder's claude (the tests' stand-in, which records
	// how it was started and then works like an agent), and the task is done.
	script.WriteString("# the README's team path: claude started by the watcher, the task done\n" +
		"json fake-clients/0.json client '^claude$' agent '^coder$' purpose '^task$'\n" +
		"exec aipm task list --json\n" +
		"json stdout '#(title==\"Write the tokenizer\").status' '^done$'\n")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "readme.txtar"), []byte(script.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 dir,
		RequireExplicitExec: true,
		Cmds:                map[string]func(ts *testscript.TestScript, neg bool, args []string){"json": cmdJSON},
		Setup: func(e *testscript.Env) error {
			e.Setenv("AIPM_DIR", "")
			e.Setenv("AIPM_AS", "")
			e.Setenv("HOME", filepath.Join(e.WorkDir, "home"))
			e.Setenv(mcpserver.EnvCheckSchemas, "1")
			return nil
		},
	})
}
