package launch

import (
	"reflect"
	"testing"

	"aipm/fsstore"
	"aipm/internal/clients"
)

// TestOwnDenials: the calls aipm's hook denied are taken out of a
// client's refusals by the call's id, or by the tool where an id is
// missing; each denial takes out one refusal.
func TestOwnDenials(t *testing.T) {
	refused := []clients.Refusal{{ID: "toolu_1", Tool: "Bash"}, {ID: "toolu_2", Tool: "Bash"}, {ID: "toolu_3", Tool: "Write"}, {Tool: "Edit"}, {Tool: "Edit"}}
	denials := []fsstore.Denial{{ToolUseID: "toolu_2", Tool: "Bash"}, {Tool: "Write"}, {ToolUseID: "toolu_9", Tool: "Edit"}, {ToolUseID: "toolu_8", Tool: "WebFetch"}}
	got := ownDenials(refused, denials)
	if want := []clients.Refusal{{ID: "toolu_1", Tool: "Bash"}, {Tool: "Edit"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("the client's own: %+v, want %+v", got, want)
	}
}

// TestRefusedFix: the fix named for refused calls works where it is
// given: the next access level, the tools by name for Claude Code under
// project, never --access full where Claude Code will not start as root.
func TestRefusedFix(t *testing.T) {
	env := func(k string) string { return "" }
	sandbox := func(k string) string { return map[string]string{"IS_SANDBOX": "1"}[k] }
	bash := []clients.Refusal{{Tool: "Bash"}, {Tool: "WebFetch"}, {Tool: "Bash"}}
	for _, tc := range []struct {
		spec   Spec
		root   bool
		getenv func(string) string
		want   string
	}{
		{Spec{Client: "claude", Access: AccessRead}, false, env, "aipm agent set coder --access project lets it edit files and run commands inside the project"},
		{Spec{Client: "codex", Access: AccessRead}, true, env, "aipm agent set coder --access project lets it edit files and run commands inside the project"},
		{Spec{Client: "codex", Access: AccessProject}, true, env, "aipm agent set coder --access full lets it write outside the project too (no sandbox), or check its log for what it tried"},
		{Spec{Client: "claude", Access: AccessProject}, false, env, "aipm agent set coder --client-arg=--allowedTools --client-arg=Bash,WebFetch allows those tools without asking, or aipm agent set coder --access full lets it do anything"},
		{Spec{Client: "claude", Access: AccessProject, Extra: []string{"--max-turns", "9"}}, true, env,
			"aipm agent set coder --client-arg=--max-turns --client-arg=9 --client-arg=--allowedTools --client-arg=Bash,WebFetch allows those tools without asking (--access full cannot start Claude Code as root)"},
		{Spec{Client: "claude", Access: AccessProject}, true, sandbox, "aipm agent set coder --client-arg=--allowedTools --client-arg=Bash,WebFetch allows those tools without asking, or aipm agent set coder --access full lets it do anything"},
		{Spec{Client: "claude", Access: AccessFull}, false, env, "check its log for why (with --access full its client asks nothing, so nothing is left to widen)"},
	} {
		o := Options{Agent: "coder", Spec: tc.spec, Root: tc.root, Getenv: tc.getenv}
		if got := refusedFix(o, bash); got != tc.want {
			t.Errorf("%+v root %v:\n got %s\nwant %s", tc.spec, tc.root, got, tc.want)
		}
	}
}

// TestRootProblem: Claude Code's own rule (2.1.332): bypassPermissions is
// refused to uid 0 unless IS_SANDBOX=1 or CLAUDE_CODE_BUBBLEWRAP is set.
func TestRootProblem(t *testing.T) {
	none := func(string) string { return "" }
	for _, tc := range []struct {
		spec   Spec
		root   bool
		getenv func(string) string
		refuse bool
	}{
		{Spec{Client: "claude", Access: AccessFull}, true, none, true},
		{Spec{Client: "claude", Access: AccessFull}, false, none, false},
		{Spec{Client: "claude", Access: AccessProject}, true, none, false},
		{Spec{Client: "codex", Access: AccessFull}, true, none, false},
		{Spec{Client: "claude", Access: AccessFull}, true, func(k string) string { return map[string]string{"IS_SANDBOX": "1"}[k] }, false},
		{Spec{Client: "claude", Access: AccessFull}, true, func(k string) string { return map[string]string{"IS_SANDBOX": "yes"}[k] }, true},
		{Spec{Client: "claude", Access: AccessFull}, true, func(k string) string { return map[string]string{"CLAUDE_CODE_BUBBLEWRAP": "1"}[k] }, false},
	} {
		if got := RootProblem(tc.spec, "coder", tc.root, tc.getenv) != ""; got != tc.refuse {
			t.Errorf("%+v root %v: refuses %v, want %v", tc.spec, tc.root, got, tc.refuse)
		}
	}
}

// TestDeniedLine: aipm's own denials said as what they are.
func TestDeniedLine(t *testing.T) {
	if got := deniedLine(nil); got != "" {
		t.Errorf("no denials: %q", got)
	}
	got := deniedLine([]fsstore.Denial{{Why: fsstore.DeniedInterrupt}, {Why: fsstore.DeniedInterrupt}, {Why: fsstore.DeniedLease, Path: "src/x.go", Holder: "bob"}, {Why: fsstore.DeniedUnreadable}})
	want := "aipm: aipm's hook stopped 4 tool calls, as aipm's rules say (nothing to widen): 2 while an interrupt waited (a human blocked, cancelled or stopped its work); " +
		"1 writing a file another holds: src/x.go (leased by bob); 1 because its notifications or the leases could not be read (aipm doctor says why)"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestOlder compares versions as numbers.
func TestOlder(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{{"2.1.300", "2.1.332", true}, {"2.1.332", "2.1.332", false}, {"2.10.0", "2.9.9", false}, {"0.99.0", "0.171.0", true}, {"1.0.0", "0.171.0", false}} {
		if got := older(tc.a, tc.b); got != tc.want {
			t.Errorf("older(%s, %s) = %v", tc.a, tc.b, got)
		}
	}
}
