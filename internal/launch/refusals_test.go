package launch

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"aipm/fsstore"
)

// codexEvents are codex exec --json's lines as Codex 0.171.0 printed them
// in a read-only sandbox (a scripted model on loopback): a command whose
// write failed but which exited 0 is an event; the command that failed
// for its write and the rejected apply_patch are none.
const codexEvents = `{"type":"thread.started","thread_id":"01a236c3-357c-7d22-839e-1f546b8800dd"}
{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata for ` + "`gpt-5.3-codex`" + ` not found. Defaulting to fallback metadata; this can degrade performance and cause issues."}}
{"type":"turn.started"}
{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc false","aggregated_output":"","exit_code":null,"status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc false","aggregated_output":"","exit_code":1,"status":"failed"}}
{"type":"item.completed","item":{"id":"item_2","type":"command_execution","command":"/bin/bash -lc 'echo hi > y.txt; echo after'","aggregated_output":"/bin/bash: line 1: y.txt: Read-only file system\nafter\n","exit_code":0,"status":"completed"}}
{"type":"error","message":"Reconnecting... 2/5 (stream disconnected before completion)"}
{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"all done"}}
{"type":"turn.completed","usage":{"input_tokens":4,"cached_input_tokens":0,"output_tokens":4}}
`

// codexRecord is the session record of that run's calls, as Codex 0.171.0
// wrote it to $CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread>.jsonl
// (cut to the fields aipm reads, with an MCP tool's call added).
const codexRecord = `{"timestamp":"2026-12-02T12:38:12.638Z","type":"session_meta","payload":{"id":"01a236c3-357c-7d22-839e-1f546b8800dd"}}
{"timestamp":"2026-12-02T12:38:12.692Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\": \"echo hi > x.txt\"}","call_id":"call_a"}}
{"timestamp":"2026-12-02T12:38:12.795Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_a","output":"Chunk ID: c90313\nWall time: 0.0000 seconds\nProcess exited with code 1\nOriginal token count: 12\nOutput:\n/bin/bash: line 1: x.txt: Read-only file system\n"}}
{"timestamp":"2026-12-02T12:38:12.819Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\": \"apply_patch <<'EOF'\\n*** Begin Patch\\n*** Add File: hello.txt\\n+hello\\n*** End Patch\\nEOF\\n\"}","call_id":"call_b"}}
{"timestamp":"2026-12-02T12:38:12.827Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_b","output":"patch rejected: writing is blocked by read-only sandbox; rejected by user approval settings"}}
{"timestamp":"2026-12-02T12:38:12.830Z","type":"response_item","payload":{"type":"function_call","name":"mcp__aipm__get_task","arguments":"{}","call_id":"call_m"}}
{"timestamp":"2026-12-02T12:38:12.831Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_m","output":"the task says: Read-only file system errors are expected"}}
{"timestamp":"2026-12-02T12:38:12.851Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\": \"ls -la\"}","call_id":"call_c"}}
{"timestamp":"2026-12-02T12:38:12.919Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_c","output":"Chunk ID: 9fb65c\nProcess exited with code 0\nOutput:\ntotal 12\n"}}
{"timestamp":"2026-12-02T12:38:12.947Z","type":"event_msg","payload":{"type":"task_complete","last_agent_message":"all done"}}
`

// feed writes text to w in pieces that cut lines, as a pipe may.
func feed(w clientOutput, text string) {
	for len(text) > 0 {
		n := min(37, len(text))
		w.Write([]byte(text[:n]))
		text = text[n:]
	}
}

// TestCodexOutput: the run's log gets Codex's words, errors and commands,
// not its JSON; the refusals come from its session record when there is
// one (both that the events leave out), else from the events; with
// --access full there is no sandbox to refuse anything.
func TestCodexOutput(t *testing.T) {
	home := t.TempDir()
	getenv := func(k string) string { return map[string]string{"CODEX_HOME": home}[k] }
	read := Spec{Client: "codex", Access: AccessRead}

	var log strings.Builder
	out := newCodexOutput(read, &log, getenv)
	feed(out, codexEvents)
	got := out.refusals()
	if want := []refusal{{tool: "a command", said: "Read-only file system"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("without a session record: refusals %+v, want %+v", got, want)
	}
	for _, line := range []string{
		"codex: Model metadata for `gpt-5.3-codex` not found. Defaulting to fallback metadata; this can degrade performance and cause issues.",
		"codex ran /bin/bash -lc false: exit 1 (failed)",
		"codex: Reconnecting... 2/5 (stream disconnected before completion)",
		"all done",
	} {
		if !strings.Contains(log.String(), line+"\n") {
			t.Errorf("the log lacks %q:\n%s", line, log.String())
		}
	}
	if strings.Contains(log.String(), `"type"`) {
		t.Errorf("the log has Codex's JSON:\n%s", log.String())
	}
	if last := strings.TrimSpace(log.String()); !strings.HasSuffix(last, "all done") {
		t.Errorf("the log ends %q, want the agent's last words", last[max(0, len(last)-40):])
	}

	dir := filepath.Join(home, "sessions", "2026", "12", "02")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rollout-2026-12-02T12-38-12-01a236c3-357c-7d22-839e-1f546b8800dd.jsonl"), []byte(codexRecord), 0o644); err != nil {
		t.Fatal(err)
	}
	out = newCodexOutput(read, &strings.Builder{}, getenv)
	feed(out, codexEvents)
	got = out.refusals()
	want := []refusal{{id: "call_a", tool: "a command", said: "Read-only file system"}, {id: "call_b", tool: "apply_patch", said: "writing is blocked by read-only sandbox"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("from the session record: refusals %+v, want %+v", got, want)
	}

	// A record cut short (a Codex killed mid-line) keeps what it holds.
	cut := codexRecord[:strings.Index(codexRecord, `"call_m"`)]
	if err := os.WriteFile(filepath.Join(dir, "rollout-2026-12-02T12-38-12-01a236c3-357c-7d22-839e-1f546b8800dd.jsonl"), []byte(cut), 0o644); err != nil {
		t.Fatal(err)
	}
	out = newCodexOutput(read, &strings.Builder{}, getenv)
	feed(out, codexEvents)
	if got := out.refusals(); !reflect.DeepEqual(got, want) {
		t.Errorf("from a record cut short: refusals %+v, want %+v", got, want)
	}

	out = newCodexOutput(Spec{Client: "codex", Access: AccessFull}, &strings.Builder{}, getenv)
	feed(out, codexEvents)
	if got := out.refusals(); len(got) != 0 {
		t.Errorf("--access full: refusals %+v, want none", got)
	}

	// Lines that are not events are passed on.
	log.Reset()
	out = newCodexOutput(read, &log, getenv)
	feed(out, "not JSON\n{\"no\":\"type\"}\n")
	out.refusals()
	if log.String() != "not JSON\n{\"no\":\"type\"}\n" {
		t.Errorf("passed on %q", log.String())
	}
}

// TestClaudeOutput: claude -p's JSON result gives the log its text and
// the refusals its permission_denials; anything else is passed on.
func TestClaudeOutput(t *testing.T) {
	var log strings.Builder
	out := newClaudeOutput(Spec{}, &log, nil)
	out.Write([]byte(`{"type":"result","subtype":"success","result":"done it","permission_denials":[{"tool_name":"Bash","tool_use_id":"toolu_1","tool_input":{"command":"make"}},{"tool_name":"Write","tool_use_id":"toolu_2","tool_input":{}}]}` + "\n"))
	got := out.refusals()
	if want := []refusal{{id: "toolu_1", tool: "Bash"}, {id: "toolu_2", tool: "Write"}}; !reflect.DeepEqual(got, want) || log.String() != "done it\n" {
		t.Errorf("refusals %+v, log %q", got, log.String())
	}
	log.Reset()
	out = newClaudeOutput(Spec{}, &log, nil)
	out.Write([]byte("Error: Invalid API key\n"))
	if got := out.refusals(); got != nil || log.String() != "Error: Invalid API key\n" {
		t.Errorf("refusals %+v, log %q", got, log.String())
	}
}

// TestOwnDenials: the calls aipm's hook denied are taken out of a
// client's refusals by the call's id, or by the tool where an id is
// missing; each denial takes out one refusal.
func TestOwnDenials(t *testing.T) {
	refused := []refusal{{id: "toolu_1", tool: "Bash"}, {id: "toolu_2", tool: "Bash"}, {id: "toolu_3", tool: "Write"}, {tool: "Edit"}, {tool: "Edit"}}
	denials := []fsstore.Denial{{ToolUseID: "toolu_2", Tool: "Bash"}, {Tool: "Write"}, {ToolUseID: "toolu_9", Tool: "Edit"}, {ToolUseID: "toolu_8", Tool: "WebFetch"}}
	got := ownDenials(refused, denials)
	if want := []refusal{{id: "toolu_1", tool: "Bash"}, {tool: "Edit"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("the client's own: %+v, want %+v", got, want)
	}
}

// TestRefusedFix: the fix named for refused calls works where it is
// given: the next access level, the tools by name for Claude Code under
// project, never --access full where Claude Code will not start as root.
func TestRefusedFix(t *testing.T) {
	env := func(k string) string { return "" }
	sandbox := func(k string) string { return map[string]string{"IS_SANDBOX": "1"}[k] }
	bash := []refusal{{tool: "Bash"}, {tool: "WebFetch"}, {tool: "Bash"}}
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
