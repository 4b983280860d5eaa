package launch_test

// The end-to-end tests of Gemini CLI (the pinned @google/gemini-cli, as
// the others: npm ci --prefix testdata/realclients), started by aipm
// launch against the scripted model's Gemini API. Its driver, what a
// shared scenario needs of a client, is one value (geminiDriver).

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"aipm/internal/failpoint"
	"aipm/internal/scriptedmodel"
)

// driver is what a scenario needs to drive one real client: its
// environment for the scripted model, aipm launch's arguments for it,
// how it names aipm's tools to the model, and the calls of its own
// file-writing and shell tools.
type driver struct {
	client string
	env    func(modelURL string) []string
	launch []string // aipm launch's own flags, after the client's name
	tool   func(name string) string
	write  func(path, content string) scriptedmodel.Call
	shell  func(command string) scriptedmodel.Call
}

// geminiDriver: Gemini CLI 0.61.0 sends to GOOGLE_GEMINI_BASE_URL with
// GEMINI_API_KEY (aipm launch sets the matching auth type in the home it
// gives it). A concrete --model skips its model router, which would
// first ask a classifier model for a JSON verdict.
var geminiDriver = driver{
	client: "gemini",
	env: func(url string) []string {
		return []string{"GOOGLE_GEMINI_BASE_URL=" + url, "GEMINI_API_KEY=scripted"}
	},
	launch: []string{"--model", "gemini-2.5-pro"},
	tool:   func(name string) string { return "mcp_aipm_" + name },
	write: func(path, content string) scriptedmodel.Call {
		return scriptedmodel.Call{Name: "write_file", Input: map[string]any{"file_path": path, "content": content}}
	},
	shell: func(command string) scriptedmodel.Call {
		return scriptedmodel.Call{Name: "run_shell_command", Input: map[string]any{"command": command}}
	},
}

// launchWith runs aipm launch for coder with d's client, flags and env,
// and env added.
func (e *e2e) launchWith(d driver, env []string, flags ...string) {
	e.t.Helper()
	args := append([]string{"launch", d.client, "--agent", "coder"}, d.launch...)
	e.run(append(d.env(e.model.URL), env...), e.aipm, append(args, flags...)...)
}

// steps is a script that makes the calls of steps in turn, one a turn,
// each after the result of the one before: steps[i] gets the request
// (holding i results) and returns its call. Then "done".
func steps(steps ...func(*scriptedmodel.Request) scriptedmodel.Call) scriptedmodel.Script {
	return func(r *scriptedmodel.Request) scriptedmodel.Turn {
		if i := len(r.Results); i < len(steps) {
			return scriptedmodel.Turn{Calls: []scriptedmodel.Call{steps[i](r)}}
		}
		return scriptedmodel.Turn{Text: "done"}
	}
}

func call(c scriptedmodel.Call) func(*scriptedmodel.Request) scriptedmodel.Call {
	return func(*scriptedmodel.Request) scriptedmodel.Call { return c }
}

// lastResult is the text of the last tool result the model was sent.
func (e *e2e) lastResult(n int) string {
	e.t.Helper()
	reqs := e.model.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if len(reqs[i].Results) >= n {
			return reqs[i].Results[n-1].Text
		}
	}
	e.t.Fatalf("%s sent no request with %d tool results", e.client, n)
	return ""
}

// TestGeminiFirstTurnHasAipmTools: with aipm serve 3 s slow to start
// (the failpoint slow-start), Gemini CLI's first model request already
// offers every aipm tool, as mcp_aipm_<tool>.
func TestGeminiFirstTurnHasAipmTools(t *testing.T) {
	d := geminiDriver
	e := newE2E(t, d.client, func(*scriptedmodel.Request) scriptedmodel.Turn { return scriptedmodel.Turn{Text: "done"} })
	tools := e.servedTools()
	e.launchWith(d, []string{failpoint.Env + "=slow-start"})
	reqs := e.model.Requests()
	if len(reqs) == 0 {
		t.Fatal("gemini made no model request")
	}
	var lost []string
	for _, name := range tools {
		if _, ok := reqs[0].Tool("", d.tool(name)); !ok {
			lost = append(lost, name)
		}
	}
	if len(lost) > 0 {
		t.Errorf("gemini's first model request, with aipm serve 3 s slow to start, lacks %d of aipm's %d tools: %s", len(lost), len(tools), strings.Join(lost, ", "))
	}
}

// TestGeminiAuthenticates: a call of aipm's authenticate through Gemini
// CLI reaches aipm serve with the agent's credential (which Gemini CLI
// passes an MCP server only because aipm's entry names it) and succeeds;
// also with the wait_for_previous argument Gemini CLI adds to every
// tool's schema and passes on to the server.
func TestGeminiAuthenticates(t *testing.T) {
	for name, input := range map[string]map[string]any{
		"plain":             {"agent_id": "coder"},
		"wait_for_previous": {"agent_id": "coder", "wait_for_previous": false},
	} {
		t.Run(name, func(t *testing.T) {
			d := geminiDriver
			e := newE2E(t, d.client, steps(call(scriptedmodel.Call{Name: d.tool("authenticate"), Input: input})))
			e.launchWith(d, nil)
			if got := e.lastResult(1); strings.Contains(got, `"error"`) || !strings.Contains(got, "coder") {
				t.Errorf("authenticate through gemini answered %s", got)
			}
		})
	}
}

// TestGeminiHookDeniesOnInterrupt: while an interrupt waits for coder's
// session, aipm's BeforeTool hook refuses Gemini CLI's write_file, the
// model reads the interrupt as the reason, and no file is written.
func TestGeminiHookDeniesOnInterrupt(t *testing.T) {
	d := geminiDriver
	// The model's handlers run in the server's goroutines, which know e
	// only once newE2E made it.
	var made atomic.Pointer[e2e]
	var mu sync.Mutex
	var interruptErr error
	interrupt := func(*scriptedmodel.Request) scriptedmodel.Call {
		e := made.Load()
		cmd := exec.Command(e.aipm, "interrupt", "coder", "stop: the plan changed")
		cmd.Dir, cmd.Env = e.dir, e.env
		if out, err := cmd.CombinedOutput(); err != nil {
			mu.Lock()
			interruptErr = &exec.Error{Name: "aipm interrupt: " + string(out), Err: err}
			mu.Unlock()
		}
		return d.write("notes.txt", "written after the interrupt")
	}
	e := newE2E(t, d.client, steps(call(scriptedmodel.Call{Name: d.tool("authenticate"), Input: map[string]any{"agent_id": "coder"}}), interrupt))
	made.Store(e)
	e.launchWith(d, nil)
	mu.Lock()
	defer mu.Unlock()
	if interruptErr != nil {
		t.Fatal(interruptErr)
	}
	got := e.lastResult(2)
	if !strings.Contains(got, "Tool execution blocked") || !strings.Contains(got, "stop: the plan changed") {
		t.Errorf("write_file while an interrupt waits answered %s; want it blocked with the interrupt", got)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "notes.txt")); err == nil {
		t.Error("notes.txt was written while an interrupt waited")
	}
}

// TestGeminiHookDeniesLeasedWrite: a write_file under the lead's
// exclusive lease is refused by aipm's hook, naming the holder, with no
// aipm session needed.
func TestGeminiHookDeniesLeasedWrite(t *testing.T) {
	d := geminiDriver
	e := newE2E(t, d.client, steps(call(d.write(filepath.Join("src", "parser", "ast.go"), "package parser"))))
	e.aipmCLI("leases", "take", "src/parser", "--reason", "rewriting the parser")
	e.launchWith(d, nil)
	got := e.lastResult(1)
	if !strings.Contains(got, "Tool execution blocked") || !strings.Contains(got, "lead") {
		t.Errorf("write_file under lead's lease answered %s; want it blocked naming lead", got)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "src", "parser", "ast.go")); err == nil {
		t.Error("src/parser/ast.go was written under lead's lease")
	}
}
