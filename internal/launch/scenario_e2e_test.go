package launch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"aipm/fsstore"
	"aipm/internal/scriptedmodel"
)

// e2eDriver is how the scripted agent works with one client's own tools:
// its edit and its shell, as the client offers them to the model (dir is
// the project, for a client whose tools take absolute paths).
type e2eDriver struct {
	write func(dir string, r *scriptedmodel.Request, path, content string) (scriptedmodel.Call, bool)
	shell func(r *scriptedmodel.Request, command string) (scriptedmodel.Call, bool)
	// own is how a human runs the client in the project after aipm
	// mcp-config CLIENT --write: the trust the client needs, recorded in
	// its home as the client records it, and the command line.
	own func(e *e2e, prompt string) (program string, args []string)
	// untrusted is what aipm doctor says, in part, while the client
	// ignores aipm's entries in a project it does not trust ("" for a
	// client with no trust of folders).
	untrusted string
	// model points the client at the scripted model through its home's
	// own files, for a run whose command line the test does not write
	// (aipm watch's); nil when the environment does it.
	model func(e *e2e)
	// home makes the client's home as a user's is after the client's own
	// setup (the files its every run reads), nil for none.
	home func(e *e2e)
	// unbuilt says what aipm tells a human who asks for the own scenario
	// of a client it cannot set up yet (aipm mcp-config CLIENT --write
	// refuses, saying this), "" when it can.
	unbuilt string
	// launchFlags are aipm launch's own flags for the client, and
	// clientArgs the client's own arguments (after --), for the scripted
	// model.
	launchFlags []string
	clientArgs  func(e *e2e) []string
}

// e2eDrivers are the clients every scenario runs with: a new client is its
// row here (and its launch in e2e.launch).
var e2eDrivers = map[string]e2eDriver{
	"claude": {
		write: func(dir string, r *scriptedmodel.Request, path, content string) (scriptedmodel.Call, bool) {
			return offeredCall(r, "Write", map[string]any{"file_path": filepath.Join(dir, path), "content": content})
		},
		shell: func(r *scriptedmodel.Request, command string) (scriptedmodel.Call, bool) {
			return offeredCall(r, "Bash", map[string]any{"command": command, "description": "run the task's command"})
		},
		own: func(e *e2e, prompt string) (string, []string) {
			// The trust dialog accepted, as claude records it.
			e.writeHomeFile(".claude.json", fmt.Sprintf(`{"projects": {%q: {"hasTrustDialogAccepted": true}}}`, e.resolvedDir()))
			return filepath.Join(e.bin, "claude"), []string{"-p", prompt, "--output-format", "json"}
		},
		untrusted: "refuses every aipm tool here",
	},
	"codex": {
		write: func(_ string, r *scriptedmodel.Request, path, content string) (scriptedmodel.Call, bool) {
			patch := "*** Begin Patch\n*** Add File: " + path + "\n+" + strings.TrimSuffix(strings.ReplaceAll(content, "\n", "\n+"), "+") + "*** End Patch\n"
			if t, ok := r.Tool("", "apply_patch"); ok && t.Custom {
				return scriptedmodel.Call{Name: "apply_patch", Raw: patch}, true
			}
			return offeredCall(r, "apply_patch", map[string]any{"input": patch})
		},
		shell: func(r *scriptedmodel.Request, command string) (scriptedmodel.Call, bool) {
			if call, ok := offeredCall(r, "exec_command", map[string]any{"cmd": command}); ok {
				return call, true
			}
			return offeredCall(r, "shell", map[string]any{"command": []string{"bash", "-lc", command}})
		},
		own: func(e *e2e, prompt string) (string, []string) {
			// The project trusted, as codex records it; its hooks' review
			// skipped for this run (a user trusts them with /hooks in codex).
			e.writeHomeFile(filepath.Join(".codex", "config.toml"), fmt.Sprintf("[projects.%q]\ntrust_level = \"trusted\"\n", e.resolvedDir()))
			args := append([]string{"exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-hook-trust", "--model", "gpt-5.5"}, e.codexModel()...)
			return filepath.Join(e.bin, "codex"), append(args, prompt)
		},
		untrusted:   "it does not trust this project",
		launchFlags: []string{"--model", "gpt-5.5"},
		clientArgs:  (*e2e).codexModel,
		model: func(e *e2e) {
			e.writeHomeFile(filepath.Join(".codex", "config.toml"), `model = "gpt-5.5"
model_provider = "scripted"
check_for_update_on_startup = false
[model_providers.scripted]
name = "scripted model"
base_url = "`+e.model.URL+`/v1"
wire_api = "responses"
env_key = "AIPM_E2E_MODEL_KEY"
[features]
plugins = false
remote_plugin = false
apps = false
[analytics]
enabled = false
`)
		},
	},
	"gemini": {
		// Gemini CLI's write_file, called even when its approval mode
		// does not offer it (a model tries): it refuses it, and says so.
		write: func(_ string, _ *scriptedmodel.Request, path, content string) (scriptedmodel.Call, bool) {
			return scriptedmodel.Call{Name: "write_file", Input: map[string]any{"file_path": path, "content": content}}, true
		},
		shell: func(r *scriptedmodel.Request, command string) (scriptedmodel.Call, bool) {
			return offeredCall(r, "run_shell_command", map[string]any{"command": command})
		},
		own: func(e *e2e, prompt string) (string, []string) {
			// The folder trusted, as gemini records it, and its auth type.
			e.writeHomeFile(filepath.Join(".gemini", "trustedFolders.json"), fmt.Sprintf(`{%q: "TRUST_FOLDER"}`, e.resolvedDir()))
			e.writeHomeFile(filepath.Join(".gemini", "settings.json"), `{"security": {"auth": {"selectedType": "gemini-api-key"}}, "privacy": {"usageStatisticsEnabled": false}}`)
			return filepath.Join(e.bin, "gemini"), []string{"-p", prompt, "--yolo"}
		},
		untrusted: "only in a folder it trusts",
	},
	"qwen": {
		// Qwen Code's write_file and run_shell_command, called even when
		// its approval mode does not offer them (a model tries): it
		// refuses them, and says so.
		write: func(dir string, _ *scriptedmodel.Request, path, content string) (scriptedmodel.Call, bool) {
			return scriptedmodel.Call{Name: "write_file", Input: map[string]any{"file_path": filepath.Join(dir, path), "content": content}}, true
		},
		shell: func(r *scriptedmodel.Request, command string) (scriptedmodel.Call, bool) {
			return offeredCall(r, "run_shell_command", map[string]any{"command": command})
		},
		own: func(e *e2e, prompt string) (string, []string) {
			// aipm's server of the project approved, as qwen mcp approve
			// records it.
			// Usage statistics off, as aipm launch sets them.
			e.writeHomeFile(filepath.Join(".qwen", "settings.json"), `{"privacy": {"usageStatisticsEnabled": false}}`)
			qwen := filepath.Join(e.bin, "qwen")
			e.run(nil, qwen, "mcp", "approve", "aipm")
			return qwen, []string{"-p", prompt, "--output-format", "json", "--auth-type", "anthropic", "--model", "claude-sonnet-4-5", "--approval-mode", "auto-edit"}
		},
		untrusted:   "qwen mcp approve aipm",
		launchFlags: []string{"--model", "claude-sonnet-4-5"},
		// Qwen Code: the scripted model's Messages API (ANTHROPIC_BASE_URL
		// and ANTHROPIC_API_KEY are in the environment).
		clientArgs: func(*e2e) []string { return []string{"--auth-type", "anthropic"} },
		model: func(e *e2e) {
			e.writeHomeFile(filepath.Join(".qwen", "settings.json"), `{"security": {"auth": {"selectedType": "anthropic"}}, "model": {"name": "claude-sonnet-4-5"}, "privacy": {"usageStatisticsEnabled": false}}`)
		},
	},
	"opencode": {
		// OpenCode's write, called even when its permission rules do not
		// offer it (a model tries): it refuses it, and says so.
		write: func(dir string, _ *scriptedmodel.Request, path, content string) (scriptedmodel.Call, bool) {
			return scriptedmodel.Call{Name: "write", Input: map[string]any{"filePath": filepath.Join(dir, path), "content": content}}, true
		},
		shell: func(r *scriptedmodel.Request, command string) (scriptedmodel.Call, bool) {
			return offeredCall(r, "bash", map[string]any{"command": command, "description": "run the task's command"})
		},
		own: func(e *e2e, prompt string) (string, []string) {
			// The prompt as words: opencode run quotes a message argument
			// that holds a space (and escapes its quotes) before the model
			// reads it, and joins its arguments with spaces.
			return filepath.Join(e.bin, "opencode"), append([]string{"run", "--format", "json", "--model", "scripted/m1"}, strings.Fields(prompt)...)
		},
		launchFlags: []string{"--model", "scripted/m1"},
		// The user's own config names the scripted model as a provider of
		// theirs (OpenCode's openai-compatible one: Chat Completions), and
		// holds the plugin SDK OpenCode installs there the first time a
		// plugin is configured (offline, each run would wait about 70 s
		// for it).
		home: func(e *e2e) {
			e.writeHomeFile(filepath.Join(".config", "opencode", "opencode.json"), `{"provider": {"scripted": {"npm": "@ai-sdk/openai-compatible", "name": "scripted model",
  "options": {"baseURL": "`+e.model.URL+`/v1", "apiKey": "sk-scripted"}, "models": {"m1": {"name": "m1"}}}}, "model": "scripted/m1", "autoupdate": false, "share": "disabled"}`)
			e.writeHomeFile(filepath.Join(".config", "opencode", "package.json"), `{"dependencies": {"@opencode-ai/plugin": "1.18.33"}}`)
			e.writeHomeFile(filepath.Join(".config", "opencode", "package-lock.json"), `{"packages": {"": {"dependencies": {"@opencode-ai/plugin": "1.18.33"}}}}`)
			e.writeHomeFile(filepath.Join(".config", "opencode", "node_modules", "@opencode-ai", "plugin", "package.json"), `{"name": "@opencode-ai/plugin", "version": "1.18.33"}`)
		},
	},
	"copilot": {
		write: func(dir string, r *scriptedmodel.Request, path, content string) (scriptedmodel.Call, bool) {
			return offeredCall(r, "create", map[string]any{"path": filepath.Join(dir, path), "file_text": content})
		},
		shell: func(r *scriptedmodel.Request, command string) (scriptedmodel.Call, bool) {
			return offeredCall(r, "bash", map[string]any{"command": command, "description": "run the task's command"})
		},
		unbuilt: "aipm mcp-config copilot --write is not supported yet",
	},
}

// offeredCall is the call of the client's own tool name, when r offers it.
func offeredCall(r *scriptedmodel.Request, name string, input map[string]any) (scriptedmodel.Call, bool) {
	if _, ok := r.Tool("", name); !ok {
		return scriptedmodel.Call{}, false
	}
	return scriptedmodel.Call{Name: name, Input: input}, true
}

// scenarioCommand is the command the agent runs on its task.
const scenarioCommand = "echo ran > ran.txt"

// TestScenarios (issue 47): every client, the same script, the real
// pinned client started as aipm watch starts it (aipm launch), against the
// scripted agent (scriptedmodel.Agent), which follows aipm's instructions
// mechanically:
//   - work: a task in progress; the agent edits a file with its own tool
//     and runs a command, then report_completed: the task is done;
//   - chat: a human's message; its chat session answers it;
//   - block: a human's interrupt while it works; its next tool call is
//     denied with the interrupt; it reports the task blocked;
//   - lease: another's exclusive lease on the file; its edit is denied
//     naming the holder; it reports the task blocked.
func TestScenarios(t *testing.T) {
	for client, driver := range e2eDrivers {
		t.Run(client, func(t *testing.T) {
			t.Parallel()
			for _, sc := range scenarios {
				t.Run(sc.name, func(t *testing.T) {
					if sc.name == "own" && driver.unbuilt != "" {
						// Not built: --write refuses, says so, and writes nothing.
						e := newE2E(t, client, func(*scriptedmodel.Request) scriptedmodel.Turn { return scriptedmodel.Turn{Text: "done"} })
						cmd := exec.Command(e.aipm, "mcp-config", client, "--write")
						cmd.Dir, cmd.Env = e.dir, e.env
						out, err := cmd.CombinedOutput()
						if err == nil || !strings.Contains(string(out), driver.unbuilt) {
							t.Errorf("aipm mcp-config %s --write: want it refused with %q, got %v:\n%s", client, driver.unbuilt, err, out)
						}
						return
					}
					// The model's handlers run in the server's goroutines,
					// which know the test's e2e only once newE2E made it.
					var made atomic.Pointer[e2e]
					agent := scriptedmodel.Agent{
						Write: func(r *scriptedmodel.Request, path, content string) (scriptedmodel.Call, bool) {
							return driver.write(made.Load().dir, r, path, content)
						},
						Shell:   driver.shell,
						Command: scenarioCommand,
					}
					if sc.onWork != nil {
						agent.OnWork = func() { sc.onWork(made.Load()) }
					}
					e := newE2E(t, client, agent.Script())
					made.Store(e)
					var env []string
					if sc.setup != nil {
						env = sc.setup(e)
					}
					if sc.run != nil {
						sc.run(e, driver, env)
					} else {
						e.launch(env)
					}
					sc.check(e)
				})
			}
		})
	}
}

type scenario struct {
	name   string
	setup  func(e *e2e) (env []string) // before the launch
	onWork func(e *e2e)                // as the agent starts its work
	check  func(e *e2e)
	// run runs the client instead of aipm launch (nil: aipm launch).
	run func(e *e2e, driver e2eDriver, env []string)
}

var scenarios = []scenario{
	{name: "work", check: func(e *e2e) {
		e.wantFile("parser.txt", "written by the scripted model")
		e.wantFile("ran.txt", "ran")
		e.wantStatus("done")
	}},
	{name: "chat", setup: func(e *e2e) []string {
		e.aipmCLI("send", "--as", "lead", "--to", "coder", "Are the tests green?")
		return []string{"AIPM_PURPOSE=chat"}
	}, check: func(e *e2e) {
		inbox := e.aipmCLI("inbox", "--as", "lead")
		if !strings.Contains(inbox, "Received: Are the tests green?") {
			e.t.Errorf("lead's inbox after the chat session: want coder's answer, got:\n%s", inbox)
		}
	}},
	{name: "block", onWork: func(e *e2e) {
		e.aipmCLI("interrupt", "coder", "stop: the plan changed", "--task", e.task, "--as", "lead")
	}, check: func(e *e2e) {
		e.wantNoFile("parser.txt")
		e.wantStatus("blocked")
		e.wantReport("the plan changed") // the model read the interrupt
	}},
	{name: "lease", setup: func(e *e2e) []string {
		e.aipmCLI("leases", "take", "parser.txt", "--as", "lead", "--reason", "rewriting it myself")
		return nil
	}, check: func(e *e2e) {
		e.wantNoFile("parser.txt")
		e.wantStatus("blocked")
		e.wantReport("leased exclusively by lead") // the model read the holder
	}},
	{name: "news", setup: func(e *e2e) []string {
		// coder holds a lease (kept past its sessions) that the lead
		// breaks while coder works: coder is notified, and its client's
		// hook tells the model at its next own tool call.
		store, err := fsstore.Open(e.dir)
		if err != nil {
			e.t.Fatal(err)
		}
		cfg, err := store.LoadConfig()
		if err != nil {
			e.t.Fatal(err)
		}
		if _, err := store.TakeLease(context.Background(), cfg, fsstore.LeaseRequest{Holder: "coder", Keep: true, Paths: []string{"docs"}, Reason: "notes"}); err != nil {
			e.t.Fatal(err)
		}
		return nil
	}, onWork: func(e *e2e) {
		e.aipmCLI("leases", "break", "docs", "--as", "lead", "--reason", "docs-lease-broken-now")
	}, check: func(e *e2e) {
		e.wantStatus("done")
		reqs := e.model.Requests()
		last := reqs[len(reqs)-1].Text
		if n := strings.Count(last, "docs-lease-broken-now"); n != 1 {
			e.t.Errorf("the model's last request tells the broken lease %d times, want once:\n%s", n, clip(last, 4000))
		}
	}},
	{name: "own", setup: func(e *e2e) []string {
		e.aipmCLI("leases", "take", "parser.txt", "--as", "lead", "--reason", "rewriting it myself")
		e.aipmCLI("mcp-config", e.client, "--write")
		// (A client with no trust of folders has no warning to give.)
		if untrusted := e2eDrivers[e.client].untrusted; untrusted != "" {
			if doctor := e.aipmDoctor(); !strings.Contains(doctor, untrusted) {
				e.t.Errorf("aipm doctor, with the project not trusted by %s: want the trust warning, got:\n%s", e.client, doctor)
			}
		}
		return []string{"AIPM_AGENT_ID=coder", "AIPM_PASSKEY_FILE=" + filepath.Join(e.dir, ".ai-pm", "credentials", "coder.passkey")}
	}, run: func(e *e2e, driver e2eDriver, env []string) {
		program, args := driver.own(e, `You are an agent of this aipm project: call authenticate with agent_id "coder", then get_next_action, and do what it says.`)
		if doctor := e.aipmDoctor(); driver.untrusted != "" && strings.Contains(doctor, driver.untrusted) {
			e.t.Errorf("aipm doctor, with the project trusted as %s records it: want no trust warning, got:\n%s", e.client, doctor)
		}
		e.run(env, program, args...)
	}, check: func(e *e2e) {
		// aipm's server and hooks came from the project's own files.
		e.wantNoFile("parser.txt")
		e.wantStatus("blocked")
		e.wantReport("leased exclusively by lead")
	}},
	{name: "refused", setup: func(e *e2e) []string {
		e.access = "read" // the client's own permissions refuse the edit
		return nil
	}, check: func(e *e2e) {
		e.wantNoFile("parser.txt")
		inbox := e.aipmCLI("inbox", "--as", "lead")
		if !strings.Contains(inbox, "refused") || !strings.Contains(inbox, "coder") {
			e.t.Errorf("lead's inbox after a run whose client refused an edit: want the refusal told, got:\n%s", inbox)
		}
	}},
}

func (e *e2e) wantFile(name, content string) {
	e.t.Helper()
	data, err := os.ReadFile(filepath.Join(e.dir, name))
	if err != nil || !strings.Contains(string(data), content) {
		e.t.Errorf("%s after the run: want %q in it, got %q (%v)", name, content, data, err)
	}
}

func (e *e2e) wantNoFile(name string) {
	e.t.Helper()
	if _, err := os.Stat(filepath.Join(e.dir, name)); err == nil {
		e.t.Errorf("%s was written: the client's edit should have been denied", name)
	}
}

func (e *e2e) wantStatus(status string) {
	e.t.Helper()
	var task struct {
		Status string `json:"status"`
	}
	out := e.aipmCLI("task", "show", e.task, "--json")
	if err := json.Unmarshal([]byte(out), &task); err != nil || task.Status != status {
		e.t.Errorf("task %s after the run: want status %s, got %q (%v)\n%s", e.task, status, task.Status, err, out)
	}
}

// wantReport: the task's record holds text, as the agent's report said it.
func (e *e2e) wantReport(text string) {
	e.t.Helper()
	if show := e.aipmCLI("task", "show", e.task, "--json"); !strings.Contains(show, text) {
		e.t.Errorf("task %s after the run: want %q in its report, got:\n%s", e.task, text, show)
	}
}

// writeHomeFile writes a file of the client's home (HOME in e.env).
func (e *e2e) writeHomeFile(name, content string) {
	e.t.Helper()
	var home string
	for _, kv := range e.env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	path := filepath.Join(home, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		e.t.Fatal(err)
	}
}

// resolvedDir is the project's directory with its links resolved, as the
// clients record trust for it.
func (e *e2e) resolvedDir() string {
	dir, err := filepath.EvalSymlinks(e.dir)
	if err != nil {
		e.t.Fatal(err)
	}
	return dir
}

// aipmDoctor is aipm doctor's output, whatever its exit code.
func (e *e2e) aipmDoctor() string {
	cmd := exec.Command(e.aipm, "doctor")
	cmd.Dir, cmd.Env = e.dir, e.env
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// TestTeamPath (issue 47): the README's team path, as printed, with each
// client: the watcher starts the agent's client for its task in progress,
// the client does the work and reports it, and the human's inbox shows
// the report.
func TestTeamPath(t *testing.T) {
	for client, driver := range e2eDrivers {
		t.Run(client, func(t *testing.T) {
			t.Parallel()
			var made atomic.Pointer[e2e]
			agent := scriptedmodel.Agent{
				Write: func(r *scriptedmodel.Request, path, content string) (scriptedmodel.Call, bool) {
					return driver.write(made.Load().dir, r, path, content)
				},
				Shell:   driver.shell,
				Command: scenarioCommand,
			}
			e := newProjectE2E(t, client, agent.Script())
			made.Store(e)
			if driver.model != nil {
				driver.model(e)
			}
			e.aipmCLI("init", "--name", "myproject")
			e.aipmCLI("agent", "add", "lead", "--type", "human", "--role", "manager")
			e.aipmCLI("agent", "add", "coder", "--type", "ai", "--parent", "lead", "--client", client)
			var task struct {
				ID string `json:"id"`
			}
			json.Unmarshal([]byte(e.aipmCLI("task", "add", "Write tokenizer.txt", "--assignee", "coder", "--status", "in_progress", "--json")), &task)
			e.task = task.ID
			e.run(nil, e.aipm, "watch", "--until-idle")
			e.wantFile("tokenizer.txt", "written by the scripted model")
			e.wantStatus("done")
			if inbox := e.aipmCLI("inbox"); !strings.Contains(inbox, "Wrote tokenizer.txt") {
				e.t.Errorf("aipm inbox after the team path: want coder's report, got:\n%s", inbox)
			}
		})
	}
}
