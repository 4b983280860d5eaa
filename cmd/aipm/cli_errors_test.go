package main

import (
	"bytes"
	"context"
	"maps"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestBadInputMessages walks every visible command of the tree and gives
// it bad input against a fresh project: an unknown flag, and, for a
// command that takes ids or agents, a bogus one (as an argument or as the
// value of an id or agent flag). Each must exit 2 (aipm hook: 1, since the
// clients read a hook's 2 as "block"; aipm serve: 0 for a bogus agent,
// which it answers its client with) with one line on stderr: "aipm: ",
// a sentence in the CLI's words (no MCP tool name, no tool error code),
// ending with a period or the command that helps.
func TestBadInputMessages(t *testing.T) {
	dir := t.TempDir()
	valid := maps.Clone(validArgs)
	for _, args := range [][]string{
		{"init", "--name", "p"},
		{"agent", "add", "lead", "--type", "human", "--role", "manager"},
		{"agent", "add", "coder", "--type", "ai", "--parent", "lead"},
		{"task", "add", "Fix it", "--assignee", "coder"},
	} {
		code, stdout, stderr := runCLI(t, dir, args...)
		if code != 0 {
			t.Fatalf("aipm %s: exit %d: %s", strings.Join(args, " "), code, stderr)
		}
		if f := strings.Fields(stdout); len(f) > 1 && f[0] == "created" {
			valid["ID"] = f[1]
		}
	}
	tools := toolNames(t)
	cases := 0
	walkCommands(newCmdRoot(newEnv(func(string) string { return "" }, nil, nil, nil)), func(c *cobra.Command) {
		for _, args := range badInputs(c, valid) {
			t.Logf("aipm %s", strings.Join(args, " "))
			cases++
			code, _, stderr := runCLI(t, dir, args...)
			want := exitUsage
			switch {
			case c.Name() == "hook":
				want = exitFailed
			case c.Name() == "serve" && !slices.Contains(args, "--no-such-flag"):
				// A flag it parses but cannot serve with, it says to its
				// client, and exits 0 when stdin closes (serve_outside.txtar).
				want = exitOK
			}
			if msg := badMessage(stderr, tools); msg != "" || code != want {
				t.Errorf("aipm %s: exit %d, stderr %q: %s", strings.Join(args, " "), code, stderr, msg)
			}
		}
	})
	if cases < 40 {
		t.Errorf("only %d cases: the walk missed commands", cases)
	}
}

// TestGroupsAlone: a command that only groups others (aipm itself, a
// noun, completion), run alone, prints its help on stdout and exits 2 with
// one line that says a command is missing; an unknown command under it is
// a usage mistake even with --help, never the group's help.
func TestGroupsAlone(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := runCLI(t, dir, "init", "--name", "p"); code != 0 {
		t.Fatalf("aipm init: %s", stderr)
	}
	tools := toolNames(t)
	groups := 0
	walkCommands(newCmdRoot(newEnv(func(string) string { return "" }, nil, nil, nil)), func(c *cobra.Command) {
		if !c.HasAvailableSubCommands() {
			return
		}
		groups++
		path := strings.Fields(c.CommandPath())[1:]
		// A group that does something alone (aipm leases lists) is not
		// missing a command.
		if c.RunE == nil || reflect.ValueOf(c.RunE).Pointer() == reflect.ValueOf(showHelp).Pointer() {
			code, stdout, stderr := runCLI(t, dir, path...)
			if msg := badMessage(stderr, tools); msg != "" || code != exitUsage || !strings.Contains(stdout, "Usage:") || !strings.Contains(stderr, "needs one of its commands") {
				t.Errorf("aipm %s: exit %d, stdout %d bytes, stderr %q: %s", strings.Join(path, " "), code, len(stdout), stderr, msg)
			}
		}
		for _, help := range []string{"--help", "-h"} {
			args := append(append([]string{}, path...), "frobnicate", help)
			code, stdout, stderr := runCLI(t, dir, args...)
			if msg := badMessage(stderr, tools); msg != "" || code != exitUsage || stdout != "" || !strings.Contains(stderr, `unknown command "frobnicate"`) {
				t.Errorf("aipm %s: exit %d, stdout %q, stderr %q: %s", strings.Join(args, " "), code, stdout, stderr, msg)
			}
		}
		code, stdout, _ := runCLI(t, dir, append(path, "--help")...)
		if code != exitOK || !strings.Contains(stdout, "Usage:") {
			t.Errorf("aipm %s --help: exit %d, stdout %q", strings.Join(path, " "), code, stdout)
		}
	})
	if groups < 6 { // aipm, agent, task, config, conversation, completion
		t.Errorf("only %d groups: the walk missed some", groups)
	}
}

// walkCommands calls f for c and every visible command below it.
func walkCommands(c *cobra.Command, f func(*cobra.Command)) {
	if c.Hidden {
		return
	}
	f(c)
	for _, sub := range c.Commands() {
		walkCommands(sub, f)
	}
}

// bogus are values for the placeholders of a command's use line (and the
// flags that take ids or agents) that name nothing in the project.
var bogus = map[string]string{
	"ID":     "zz", // a well-formed id prefix that matches nothing
	"AGENT":  "ghost",
	"STATUS": "todo",
	"TITLE":  "x",
	"TEXT":   "x",
	"REASON": "x",
}

// valid are values for the same placeholders that name what the project
// holds (the task's id is set when it is created), so that a bad flag is
// the only mistake.
var validArgs = map[string]string{"ID": "", "AGENT": "coder", "STATUS": "todo", "TITLE": "x", "TEXT": "x", "REASON": "x"}

// idFlags are the flags that name an agent or an id, with a bogus value.
var idFlags = map[string]string{"as": "ghost", "assignee": "ghost", "to": "ghost", "agent": "ghost", "parent": "ghost", "task": "zz"}

// badInputs are the bad command lines for c: an unknown flag; the
// positional arguments its use line names, bogus; and each flag that
// takes an id or agent with a bogus value.
func badInputs(c *cobra.Command, valid map[string]string) [][]string {
	path := strings.Fields(c.CommandPath())[1:]
	out := [][]string{append(append([]string{}, path...), "--no-such-flag")}
	pos := useArgs(c, bogus)
	if len(pos) > 0 && (strings.Contains(c.Use, "ID") || strings.Contains(c.Use, "AGENT")) && c.Name() != "add" {
		out = append(out, append(append([]string{}, path...), pos...))
	}
	good := useArgs(c, valid)
	c.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if v, ok := idFlags[f.Name]; ok {
			args := append(append([]string{}, path...), good...)
			out = append(out, append(args, "--"+f.Name, v))
		}
	})
	return out
}

// useArgs are the arguments c's use line asks for, up to its first
// optional part: its placeholders from values (a new id for add), a
// choice (claude|codex) its first, a flag it needs with its value.
func useArgs(c *cobra.Command, values map[string]string) []string {
	var args []string
	for _, word := range strings.Fields(c.Use)[1:] {
		if strings.HasPrefix(word, "[") {
			break
		}
		word = strings.SplitN(word, "|", 2)[0]
		v, ok := values[word]
		switch {
		case !ok:
			v = word // a literal: a choice such as claude, or a flag
		case c.Name() == "add" && word == "ID":
			v = "newbot"
		case word == "ID" && c.HasParent() && c.Parent().Name() == "agent":
			v = values["AGENT"]
		}
		args = append(args, v)
	}
	return args
}

// runCLI runs aipm in the project dir as mainExit does, with a deadline.
func runCLI(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	err := run(ctx, append([]string{"--dir", dir}, args...), func(string) string { return "" }, strings.NewReader(""), &stdout, &stderr)
	if ctx.Err() != nil {
		t.Fatalf("aipm %s did not end within 10s", strings.Join(args, " "))
	}
	code := report(&stderr, err, false)
	return code, stdout.String(), stderr.String()
}

var (
	// toolCode is an MCP tool error code in front of a message.
	toolCode = regexp.MustCompile(`^aipm: [a-z]+(_[a-z]+)+:`)
	// commandHint is a message's end that names what helps: an aipm
	// command (with --help, a flag or an argument), in parentheses or not.
	commandHint = regexp.MustCompile(`(aipm( [a-z][a-z-]*)+( --?[a-z-]+| [A-Z]+)*|--[a-z-]+( [A-Z"]+)?)\)?$`)
)

// badMessage says what is wrong with stderr as the answer to bad input,
// or "" when nothing is.
func badMessage(stderr string, tools []string) string {
	line, ok := strings.CutSuffix(stderr, "\n")
	switch {
	case !ok || strings.Contains(line, "\n"):
		return "want exactly one line"
	case !strings.HasPrefix(line, "aipm: "):
		return `want it to start with "aipm: "`
	case toolCode.MatchString(line):
		return "it starts with a tool error code"
	case !strings.HasSuffix(line, ".") && !commandHint.MatchString(line):
		return "want it to end with a period or a command hint"
	}
	for _, tool := range tools {
		if regexp.MustCompile(`\b` + tool + `\b`).MatchString(line) {
			return "it names the MCP tool " + tool
		}
	}
	return ""
}

// toolNames are the MCP tools' names whose words are not plain English
// (help, logout, authenticate are words a CLI sentence may use), read
// from the committed schemas: mcpserver exports no list of its tools.
func toolNames(t *testing.T) []string {
	files, err := filepath.Glob(filepath.Join("..", "..", "mcpserver", "schemas", "*.input.json"))
	if err != nil || len(files) < 10 {
		t.Fatalf("mcpserver/schemas: %d files, %v", len(files), err)
	}
	var names []string
	for _, f := range files {
		if name := strings.TrimSuffix(filepath.Base(f), ".input.json"); strings.Contains(name, "_") {
			names = append(names, name)
		}
	}
	return names
}
