package codex

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"aipm/internal/clients/clientkit"
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
func feed(w clientkit.Output, text string) {
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
	read := clientkit.Run{Access: clientkit.AccessRead, Getenv: getenv}

	var log strings.Builder
	out := newCodexOutput(read, &log)
	feed(out, codexEvents)
	got := out.Refusals()
	if want := []clientkit.Refusal{{Tool: "a command", Said: "Read-only file system"}}; !reflect.DeepEqual(got, want) {
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
	out = newCodexOutput(read, &strings.Builder{})
	feed(out, codexEvents)
	got = out.Refusals()
	want := []clientkit.Refusal{{ID: "call_a", Tool: "a command", Said: "Read-only file system"}, {ID: "call_b", Tool: "apply_patch", Said: "writing is blocked by read-only sandbox"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("from the session record: refusals %+v, want %+v", got, want)
	}

	// A record cut short (a Codex killed mid-line) keeps what it holds.
	cut := codexRecord[:strings.Index(codexRecord, `"call_m"`)]
	if err := os.WriteFile(filepath.Join(dir, "rollout-2026-12-02T12-38-12-01a236c3-357c-7d22-839e-1f546b8800dd.jsonl"), []byte(cut), 0o644); err != nil {
		t.Fatal(err)
	}
	out = newCodexOutput(read, &strings.Builder{})
	feed(out, codexEvents)
	if got := out.Refusals(); !reflect.DeepEqual(got, want) {
		t.Errorf("from a record cut short: refusals %+v, want %+v", got, want)
	}

	out = newCodexOutput(clientkit.Run{Access: clientkit.AccessFull, Getenv: getenv}, &strings.Builder{})
	feed(out, codexEvents)
	if got := out.Refusals(); len(got) != 0 {
		t.Errorf("--access full: refusals %+v, want none", got)
	}

	// Lines that are not events are passed on.
	log.Reset()
	out = newCodexOutput(read, &log)
	feed(out, "not JSON\n{\"no\":\"type\"}\n")
	out.Refusals()
	if log.String() != "not JSON\n{\"no\":\"type\"}\n" {
		t.Errorf("passed on %q", log.String())
	}
}
