package remote

import (
	"slices"
	"strings"
	"testing"
)

// TestParse: HOST[:PATH], a bracketed host with colons, and one sentence
// for what names no usable host.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Target
		err  string
	}{
		{"home", Target{Host: "home"}, ""},
		{"home:/srv/project", Target{Host: "home", Dir: "/srv/project"}, ""},
		{"me@home:~/p", Target{Host: "me@home", Dir: "~/p"}, ""},
		{"[::1]:/p", Target{Host: "::1", Dir: "/p"}, ""},
		{"[::1]", Target{Host: "::1"}, ""},
		{"[::1/p", Target{}, "needs its closing ]"},
		{"[::1]x", Target{}, "needs its closing ]"},
		{":/p", Target{}, "names no host"},
		{"", Target{}, "names no host"},
		{"-oProxyCommand=x", Target{}, "cannot start with -"},
		{"a b:/p", Target{}, "has no spaces"},
	} {
		got, err := Parse(tc.in)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Parse(%q) = %+v, %v; want an error saying %q", tc.in, got, err, tc.err)
			}
		case err != nil || got != tc.want:
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

// TestSplit: the global --remote before the command is taken out of the
// arguments; after the command it is a mistake, but for mcp-config's own
// and after --.
func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		value string
		rest  []string
		found bool
		err   string
	}{
		{[]string{"status"}, "", []string{"status"}, false, ""},
		{[]string{"--remote", "home:/p", "status"}, "home:/p", []string{"status"}, true, ""},
		{[]string{"--utc", "--remote=home", "task", "list"}, "home", []string{"--utc", "task", "list"}, true, ""},
		{[]string{"--dir", "--remote", "status"}, "", []string{"--dir", "--remote", "status"}, false, ""},
		{[]string{"--remote"}, "", nil, true, "--remote needs a value"},
		{[]string{"status", "--remote", "home"}, "", nil, false, "--remote goes before the command"},
		{[]string{"mcp-config", "claude", "--remote", "home", "--agent", "a"}, "", []string{"mcp-config", "claude", "--remote", "home", "--agent", "a"}, false, ""},
		{[]string{"send", "--to", "a", "--", "--remote"}, "", []string{"send", "--to", "a", "--", "--remote"}, false, ""},
	} {
		value, rest, found, err := Split(tc.args)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Split(%q): %v, want an error saying %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || value != tc.value || found != tc.found || !slices.Equal(rest, tc.rest) {
			t.Errorf("Split(%q) = %q, %q, %v, %v; want %q, %q, %v", tc.args, value, rest, found, err, tc.value, tc.rest, tc.found)
		}
	}
}

// TestCommand: the words run on the home machine are quoted for its shell,
// a leading ~/ left to it, and only AIPM_AS crosses.
func TestCommand(t *testing.T) {
	env := map[string]string{"AIPM_AS": "lead", "AIPM_PASSKEY": "aipk_secret", EnvSSHCommand: "ssh -p 2222"}
	getenv := func(k string) string { return env[k] }
	words := Command(getenv, Target{Host: "home", Dir: "~/my project"}, []string{"send", "--to", "coder", "it's done"})
	want := []string{"env", "AIPM_AS=lead", "aipm", "--dir", "~/'my project'", "send", "--to", "coder", `'it'\''s done'`}
	if !slices.Equal(words, want) {
		t.Errorf("Command = %q, want %q", words, want)
	}
	argv := Argv(getenv, false, "home", words)
	if !slices.Equal(argv[:5], []string{"ssh", "-p", "2222", "-T", "home"}) || argv[5] != "--" {
		t.Errorf("Argv = %q", argv)
	}
	if got := SSHProgram(func(string) string { return "" }); !slices.Equal(got, []string{"ssh"}) {
		t.Errorf("SSHProgram without %s = %q", EnvSSHCommand, got)
	}
}
