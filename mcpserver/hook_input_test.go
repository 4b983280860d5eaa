package mcpserver_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"aipm/fsstore"
	"aipm/hook"
	"aipm/internal/hookschema"
)

// hookFed runs `aipm hook --client client` for agent's task session with
// stdin written by feed, which may leave it open (the hook must answer
// without its end) or write more than the hook reads. A hook still
// running after a minute waits for stdin to close: the test fails.
func (p *project) hookFed(t *testing.T, client, agent string, feed func(io.Writer)) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(aipmBin, "--dir", p.store.ProjectDir(), "hook", "--client", client)
	cmd.Env = append(os.Environ(), fsstore.EnvAgentID+"="+agent, fsstore.EnvPasskey+"="+p.passkeys[agent], fsstore.EnvPurpose+"=task")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go feed(stdin) // stdin stays open until the hook exits
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(time.Minute):
		stdin.Close()
		<-exited
		t.Fatalf("aipm hook %s answered only once stdin closed: %s", client, errb.String())
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// event is a client's hook input for a PreToolUse of tool, with
// toolInput as the tool's input.
func (p *project) event(name, tool, toolInput string) string {
	return fmt.Sprintf(`{"session_id":"cs-1","transcript_path":"/tmp/t.jsonl","cwd":%q,"hook_event_name":%q,"tool_name":%q,"tool_input":%s,"turn_id":"t1"}`,
		p.store.ProjectDir(), name, tool, toolInput)
}

// oversized writes a PreToolUse of tool whose input (a file the model
// writes) is past hook.MaxInput, until the hook stops reading.
func (p *project) oversized(tool string) func(io.Writer) {
	return func(w io.Writer) {
		head, tail, _ := strings.Cut(p.event(hook.PreToolUse, tool, `{"content":"#"}`), "#")
		chunk := bytes.Repeat([]byte("x"), 1<<20)
		if _, err := io.WriteString(w, head); err != nil {
			return
		}
		for range hook.MaxInput>>20 + 1 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		io.WriteString(w, tail)
	}
}

// Issue 34, item 16: the hook reads one JSON value and answers without
// waiting for stdin to close; an input it cannot read whole (over
// hook.MaxInput, or not JSON) is a mistake (exit 1), except that while an
// interrupt waits a tool call is still refused: a PreToolUse it names is
// denied, an event it does not name is blocked (exit 2).
func TestHookInput(t *testing.T) {
	p := newProject(t)
	task := p.taskInProgress("coder", "Fix login")
	cs := p.connect("2025-11-25")
	p.authenticate(cs, "coder", "task")
	open := func(event string) func(io.Writer) { return func(w io.Writer) { io.WriteString(w, event) } }
	bash := p.event(hook.PreToolUse, "Bash", `{"command":"ls"}`)

	for _, client := range []string{"claude", "codex"} {
		if out, errs, code := p.hookFed(t, client, "coder", open(bash)); out != "" || code != 0 {
			t.Fatalf("%s, stdin left open, nothing waits: %q, exit %d, %s", client, out, code, errs)
		}
	}
	for _, feed := range []func(io.Writer){p.oversized("Write"), open("not json")} {
		if out, errs, code := p.hookFed(t, "claude", "coder", feed); out != "" || code != 1 || !strings.Contains(errs, "aipm: hook: hook input") {
			t.Fatalf("unreadable input, nothing waits: %q, exit %d, %s", out, code, errs)
		}
	}

	if _, err := p.store.UpdateTask(context.Background(), p.cfg, task.ID, "lead", fsstore.TaskChange{Status: fsstore.StatusBlocked, Reason: "API changes"}); err != nil {
		t.Fatal(err)
	}
	for _, client := range []string{"claude", "codex"} {
		for what, feed := range map[string]func(io.Writer){"stdin left open": open(bash), "an input over MaxInput": p.oversized("Write")} {
			out, errs, code := p.hookFed(t, client, "coder", feed)
			if code != 0 || !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, "aipm interrupt for coder") {
				t.Fatalf("%s, %s, an interrupt waits: %q, exit %d, %s", client, what, out, code, errs)
			}
			if err := hookschema.Check("../testdata/hooks", client, hook.PreToolUse, []byte(out)); err != nil {
				t.Fatalf("%s, %s: %v", client, what, err)
			}
		}
	}
	if out, errs, code := p.hookFed(t, "claude", "coder", open("not json")); code != 2 || out != "" || !strings.Contains(errs, "aipm interrupt for coder") {
		t.Fatalf("input naming no event, an interrupt waits: %q, exit %d, %s; want exit 2 with the interrupt", out, code, errs)
	}
	// aipm's own tool is never refused, whatever its input.
	if out, errs, code := p.hookFed(t, "claude", "coder", p.oversized("mcp__aipm__report_completed")); out != "" || code != 1 {
		t.Fatalf("aipm's own tool with an input over MaxInput: %q, exit %d, %s", out, code, errs)
	}
}

// Issue 46, items 6 and 12: the hook's read of stdin is bounded in time as
// it is in size, and an input it cannot read whole never lets a file
// write past a lease. A client that writes nothing, or half an event, and
// keeps stdin open is answered within hook.ReadLimit; a PreToolUse of a
// file-writing tool (or of a tool the input does not name) so cut, or
// over hook.MaxInput, is denied with one sentence while another holds an
// exclusive lease, since its files cannot be checked; any other such
// event is a mistake (exit 1, nothing on stdout).
func TestHookInputBounds(t *testing.T) {
	p := newProject(t)
	p.taskInProgress("coder", "Fix login")
	cs := p.connect("2025-11-25")
	p.authenticate(cs, "coder", "task")
	file := p.store.ProjectDir() + "/src/a.go"
	// cut is a feed of event's start, up to a little of the tool's input,
	// with stdin left open.
	cut := func(event string) func(io.Writer) {
		i := strings.Index(event, `"tool_input":`)
		if i < 0 {
			i = len(event) - 2
		}
		return func(w io.Writer) { io.WriteString(w, event[:min(i+18, len(event)-2)]) }
	}
	write := p.event(hook.PreToolUse, "Write", fmt.Sprintf(`{"file_path":%q,"content":"package a"}`, file))
	patch := p.event(hook.PreToolUse, "apply_patch", `{"command":"*** Begin Patch\n*** Add File: src/b.go\n+package b\n*** End Patch\n"}`)
	bash := p.event(hook.PreToolUse, "Bash", `{"command":"ls -la /"}`)
	nothing := func(io.Writer) {}
	unnamed := func(w io.Writer) { io.WriteString(w, `{"session_id":"cs-1","hook_event_name":"PreToolUse"`) }

	type hookCase struct {
		name   string
		client string
		feed   func(io.Writer)
		denied bool
	}
	run := func(t *testing.T, cases []hookCase) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				out, errs, code := p.hookFed(t, tc.client, "coder", tc.feed)
				switch {
				case tc.denied && (code != 0 || !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, "could not be read whole")):
					t.Fatalf("%q, exit %d, %s; want a deny saying the input could not be read whole", out, code, errs)
				case tc.denied:
					if err := hookschema.Check("../testdata/hooks", tc.client, hook.PreToolUse, []byte(out)); err != nil {
						t.Fatal(err)
					}
				case out != "" || code != 1 || !strings.Contains(errs, "aipm: hook: "):
					t.Fatalf("%q, exit %d, %s; want a mistake: exit 1, a line on stderr, nothing on stdout", out, code, errs)
				}
			})
		}
	}
	t.Run("no lease held", func(t *testing.T) {
		run(t, []hookCase{
			{"nothing written", "claude", nothing, false},
			{"half a Write", "claude", cut(write), false},
			{"a Write over MaxInput", "claude", p.oversized("Write"), false},
		})
	})
	if _, err := p.store.TakeLease(context.Background(), p.cfg, fsstore.LeaseRequest{Holder: "lead", Paths: []string{"docs"}, Reason: "rewriting the docs"}); err != nil {
		t.Fatal(err)
	}
	t.Run("another holds a lease", func(t *testing.T) {
		run(t, []hookCase{
			{"nothing written", "claude", nothing, false},
			{"half a Write", "claude", cut(write), true},
			{"half an apply_patch", "codex", cut(patch), true},
			{"a PreToolUse naming no tool", "claude", unnamed, true},
			{"a Write over MaxInput", "claude", p.oversized("Write"), true},
			{"half a Bash", "claude", cut(bash), false},
			{"half aipm's own tool", "claude", cut(p.event(hook.PreToolUse, "mcp__aipm__lease", `{"paths":["docs"]}`)), false},
		})
	})
}
