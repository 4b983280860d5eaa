package launch_test

// The end-to-end tests: the real, pinned Claude Code and Codex (installed
// by npm ci --prefix testdata/realclients, as .ci/run does), started the
// way aipm launch starts them, against a scripted model on loopback
// (internal/scriptedmodel). They never reach the internet: the model is on
// loopback, updates, telemetry, Codex's plugins and apps are off, and the
// model server is the clients' HTTPS_PROXY, so that whatever else they
// reach for is refused there, and fails the test (run). Each client runs
// in a home of its own, which it has never seen (no login, no trust, no
// cached tool list).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/internal/failpoint"
	"aipm/internal/scriptedmodel"
	"aipm/internal/testenv"
)

// e2eBin is the directory of the aipm built for the end-to-end tests, once,
// when the first of them needs it.
var (
	e2eBuild sync.Once
	e2eBin   string
	e2eErr   error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if e2eBin != "" {
		os.RemoveAll(e2eBin)
	}
	os.Exit(code)
}

// aipmBinary is the aipm the clients start as their MCP server and hooks.
func aipmBinary(t *testing.T) string {
	t.Helper()
	e2eBuild.Do(func() {
		if e2eBin, e2eErr = os.MkdirTemp("", "aipm-e2e-bin-"); e2eErr != nil {
			return
		}
		out, err := exec.Command("go", append(append([]string{"build"}, testenv.GoBuildFlags()...), "-o", e2eBin+string(filepath.Separator), "aipm/cmd/aipm")...).CombinedOutput()
		if err != nil {
			e2eErr = fmt.Errorf("go build aipm: %v\n%s", err, out)
		}
	})
	if e2eErr != nil {
		t.Fatal(e2eErr)
	}
	return filepath.Join(e2eBin, "aipm")
}

// realClient is the directory holding the pinned client name (claude or
// codex), or a skip naming what this machine lacks.
func realClient(t *testing.T, name string) string {
	t.Helper()
	testenv.SkipIfShort(t, "drives the real "+name+" against a scripted model")
	if _, err := exec.LookPath("node"); err != nil {
		testenv.SkipMissing(t, "node: node is not on PATH, and the real clients are npm packages")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "testdata", "realclients", "node_modules", ".bin")
	if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
		testenv.SkipMissing(t, "the pinned "+name+": run npm ci --prefix testdata/realclients")
	}
	return bin
}

// clientHome is a home the client has never seen. Codex refuses to create
// its sandbox helpers under /tmp, so the home is not there: t.TempDir()
// when it is elsewhere, else a directory in the user's cache directory,
// removed when the test ends.
func clientHome(t *testing.T) string {
	t.Helper()
	underTmp := func(dir string) bool { return dir == "/tmp" || strings.HasPrefix(dir, "/tmp/") }
	if dir := t.TempDir(); !underTmp(dir) {
		return dir
	}
	cache, err := os.UserCacheDir()
	if err != nil || underTmp(cache) {
		return t.TempDir() // Codex's commands would fail; these tests run none
	}
	if err := os.MkdirAll(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(cache, "aipm-e2e-home-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// e2e is one client run: the project, made with the aipm CLI, its agent
// coder started as that client, and the model it talks to.
type e2e struct {
	t      *testing.T
	client string // claude or codex
	aipm   string
	bin    string   // the directory of the pinned clients
	dir    string   // the project, a folder the client never trusted
	task   string   // the id of coder's task in progress
	access string   // aipm launch's --access, "" for its default
	env    []string // the client's environment
	model  *scriptedmodel.Server
}

// newProjectE2E is a folder for a project not made yet, the client's
// environment, and the model started with script.
func newProjectE2E(t *testing.T, client string, script scriptedmodel.Script) *e2e {
	t.Helper()
	bin := realClient(t, client)
	e := &e2e{t: t, client: client, aipm: aipmBinary(t), bin: bin, dir: t.TempDir()}
	model, err := scriptedmodel.Start(script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	e.model = model
	e.env = []string{
		"PATH=" + bin + string(os.PathListSeparator) + filepath.Dir(e.aipm) + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + clientHome(t),
		"LANG=C.UTF-8",
		// Claude Code: the model, and nothing else on the network.
		"ANTHROPIC_BASE_URL=" + model.URL,
		"ANTHROPIC_API_KEY=sk-ant-scripted",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		// Codex: the key of the model provider codexModel names.
		"AIPM_E2E_MODEL_KEY=sk-scripted",
		// Gemini CLI: the model, its key, and a concrete model (which
		// skips its model router, a classifier model's JSON verdict).
		"GOOGLE_GEMINI_BASE_URL=" + model.URL,
		"GEMINI_API_KEY=scripted",
		"GEMINI_MODEL=gemini-2.5-pro",
		// GitHub Copilot CLI: BYOK, no GitHub login, the Messages API. A
		// model it does not know: it offers MCP tools up front (for one it
		// knows, claude-sonnet-4, it defers them behind tool_search_tool).
		// aipm launch sets COPILOT_OFFLINE=true, which keeps it off
		// api.github.com.
		"COPILOT_PROVIDER_BASE_URL=" + model.URL,
		"COPILOT_PROVIDER_TYPE=anthropic",
		"COPILOT_PROVIDER_API_KEY=sk-ant-scripted",
		"COPILOT_MODEL=scripted-model",
		// OpenCode: no fetch of models.dev's catalogue (its provider is the
		// user's config's: e2eDrivers' home).
		"OPENCODE_DISABLE_MODELS_FETCH=1",
		// Anything not on loopback goes to the model server, which
		// refuses it and records where it meant to go.
		"HTTPS_PROXY=" + model.URL, "HTTP_PROXY=" + model.URL, "NO_PROXY=127.0.0.1,localhost",
	}
	if tmp := os.Getenv("TMPDIR"); tmp != "" {
		e.env = append(e.env, "TMPDIR="+tmp)
	}
	if home := e2eDrivers[client].home; home != nil {
		home(e)
	}
	// A project is a git checkout, as most are: the clients key trust by
	// its root. (Codex's sandbox leaves an empty .git skeleton in the
	// temporary directory, which would make that the root of a project in
	// it that is not one.)
	if git, err := exec.LookPath("git"); err == nil {
		if out, err := exec.Command(git, "init", "-q", e.dir).CombinedOutput(); err != nil {
			t.Fatalf("git init: %v\n%s", err, out)
		}
	}
	return e
}

// newE2E makes the project (a human lead, coder an AI agent started as
// client, a task of coder's in progress) and starts the model with script.
func newE2E(t *testing.T, client string, script scriptedmodel.Script) *e2e {
	t.Helper()
	e := newProjectE2E(t, client, script)
	e.aipmCLI("init", "--name", "shop")
	e.aipmCLI("agent", "add", "lead", "--type", "human", "--role", "manager")
	e.aipmCLI("agent", "add", "coder", "--type", "ai", "--parent", "lead", "--client", client)
	var task struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(e.aipmCLI("task", "add", "Write parser.txt", "--assignee", "coder", "--status", "in_progress", "--json")), &task); err != nil {
		t.Fatal(err)
	}
	e.task = task.ID
	return e
}

// aipmCLI runs the aipm CLI in the project.
func (e *e2e) aipmCLI(args ...string) string {
	e.t.Helper()
	cmd := exec.Command(e.aipm, args...)
	cmd.Dir, cmd.Env = e.dir, e.env
	out, err := cmd.Output()
	if err != nil {
		e.t.Fatalf("aipm %s: %v\n%s", strings.Join(args, " "), err, stderrOf(err))
	}
	return string(out)
}

func stderrOf(err error) []byte {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.Stderr
	}
	return nil
}

// codexModel are Codex's own arguments for the scripted model: a model
// Codex knows (so that it defers MCP tools behind tool_search, as for its
// users), served by a provider on loopback over the Responses API; and
// off, what would reach for the internet (the update check, the plugins'
// and apps' catalogues on github.com and chatgpt.com, analytics).
func (e *e2e) codexModel() []string {
	set := func(kv string) []string { return []string{"-c", kv} }
	return slices.Concat(
		set(`model_provider="scripted"`),
		set(`model_providers.scripted.name="scripted model"`),
		set(`model_providers.scripted.base_url="`+e.model.URL+`/v1"`),
		set(`model_providers.scripted.wire_api="responses"`),
		set(`model_providers.scripted.env_key="AIPM_E2E_MODEL_KEY"`),
		set(`check_for_update_on_startup=false`),
		set(`features.plugins=false`), set(`features.remote_plugin=false`), set(`features.apps=false`), set(`analytics.enabled=false`),
	)
}

// launch runs aipm launch for coder, the way aipm watch does, with env
// added to the client's environment and the client's own args after --,
// and waits for it (two minutes at most).
func (e *e2e) launch(env []string, args ...string) {
	e.t.Helper()
	launch := []string{"launch", e.client, "--agent", "coder"}
	if e.access != "" {
		launch = append(launch, "--access", e.access)
	}
	d := e2eDrivers[e.client]
	launch = append(launch, d.launchFlags...)
	if d.clientArgs != nil {
		args = append(d.clientArgs(e), args...)
	}
	e.run(env, e.aipm, append(append(launch, "--"), args...)...)
}

// run runs program, a client run, in the project with env added to the
// client's environment, and waits for it (two minutes at most).
func (e *e2e) run(env []string, program string, args ...string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, program, args...)
	run.Dir, run.Env = e.dir, append(slices.Clone(e.env), env...)
	var out bytes.Buffer
	run.Stdout, run.Stderr = &out, &out
	if err := run.Run(); err != nil {
		e.t.Fatalf("%s %s: %v\n%s", program, strings.Join(args, " "), err, out.Bytes())
	}
	e.t.Logf("%s: %d model requests, not served: %q\n%s", e.client, len(e.model.Requests()), e.model.Unknown(), clip(out.String(), 2000))
	for _, u := range e.model.Unknown() {
		if strings.HasPrefix(u, "CONNECT ") {
			e.t.Errorf("%s reached for the internet (refused by the scripted model, its proxy): %s", e.client, u)
		}
	}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// servedTools are the tools aipm serve lists in the project, asked of it.
func (e *e2e) servedTools() []string {
	e.t.Helper()
	return sortedKeys(e.servedSchemas())
}

// servedSchemas are the tools aipm serve lists in the project, asked of
// it, each with the properties of its input schema.
func (e *e2e) servedSchemas() map[string]map[string]bool {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.Command(e.aipm, "serve")
	cmd.Dir, cmd.Env = e.dir, e.env
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	tools := map[string]map[string]bool{}
	for _, tool := range res.Tools {
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		raw, _ := json.Marshal(tool.InputSchema)
		json.Unmarshal(raw, &schema)
		props := map[string]bool{}
		for name := range schema.Properties {
			props[name] = true
		}
		tools[tool.Name] = props
	}
	if len(tools) < 20 {
		e.t.Fatalf("aipm serve lists %d tools: %v", len(tools), sortedKeys(tools))
	}
	return tools
}

// available says whether aipm's tool name can be called in r, named as
// the client names it: Claude Code mcp__aipm__<tool>, Codex <tool> in the
// namespace mcp__aipm.
func available(r *scriptedmodel.Request, name string) bool {
	for _, t := range r.Tools {
		if bareAipmName(t) == name {
			return true
		}
	}
	return false
}

// missing are the tools of names that r does not let the model call.
func missing(r *scriptedmodel.Request, names []string) []string {
	var out []string
	for _, name := range names {
		if !available(r, name) {
			out = append(out, name)
		}
	}
	return out
}

// instructionsStart is the start of aipm's server instructions, the words
// a client shows with aipm's deferred tools.
const instructionsStart = "aipm coordinates the agents of this project."

// deferredShown says whether r shows the model every tool of names as a
// deferred tool it can load: Claude Code lists each by name
// (mcp__aipm__<tool>) beside aipm's instructions; Codex lists the
// namespace mcp__aipm with aipm's instructions as its description.
func deferredShown(r *scriptedmodel.Request, names []string) bool {
	if !strings.Contains(r.Text, instructionsStart) {
		return false
	}
	if r.API == scriptedmodel.OpenAI {
		return regexp.MustCompile(`(?m)^- mcp__aipm_*: ` + regexp.QuoteMeta(instructionsStart)).MatchString(r.Text)
	}
	for _, name := range names {
		if !strings.Contains(r.Text, "mcp__aipm__"+name+"\n") {
			return false
		}
	}
	return true
}

// TestFirstTurnHasAipmTools (issue 45, item 7): with aipm serve slow to
// start (3 s, the failpoint slow-start), the first model request of each
// client started by aipm launch already offers aipm's tools, or, where the
// client defers them, shows them with aipm's instructions so that the
// model can load them. The clients' own settings say not to wait: Claude
// Code's CLAUDE_CODE_MCP_STARTUP_WAIT_MS=0 (a host's "do not hold the first
// turn for MCP servers"; left unset, claude -p with --mcp-config holds it
// for up to MCP_TIMEOUT), Codex's default (an MCP server not required
// gets about a second, then the turn starts without it). Codex passes an
// MCP server only the variables it names, so its failpoint goes in the
// server's env.
func TestFirstTurnHasAipmTools(t *testing.T) {
	done := func(*scriptedmodel.Request) scriptedmodel.Turn { return scriptedmodel.Turn{Text: "done"} }
	for _, client := range []string{"claude", "codex", "qwen", "copilot", "opencode"} {
		t.Run(client, func(t *testing.T) {
			t.Parallel()
			e := newE2E(t, client, done)
			tools := e.servedTools()
			env := []string{failpoint.Env + "=slow-start", "CLAUDE_CODE_MCP_STARTUP_WAIT_MS=0"}
			var args []string
			if client == "codex" {
				args = []string{"-c", `mcp_servers.aipm.env.` + failpoint.Env + `="slow-start"`}
			}
			e.launch(env, args...)
			// The first turn: the first request that offers the model any
			// tool (OpenCode's title request, before it, offers none).
			var first *scriptedmodel.Request
			for _, r := range e.model.Requests() {
				if len(r.Tools) > 0 {
					first = r
					break
				}
			}
			if first == nil {
				t.Fatalf("%s made no model request that offers any tool", client)
			}
			if lost := missing(first, tools); len(lost) > 0 && !deferredShown(first, tools) {
				t.Errorf("%s's first model request, with aipm serve 3 s slow to start, neither offers %d of aipm's %d tools (%s) nor shows them deferred with aipm's instructions: the model starts without aipm",
					client, len(lost), len(tools), strings.Join(lost, ", "))
			}
		})
	}
}

// TestToolSearchLoadsEveryTool (issue 45, item 8): in each client that
// defers aipm's tools, the one search aipm's instructions give, read from
// the instructions as the client shows them and called with the client's
// own tool search in the instructions' words (SearchHintCall), makes every
// tool aipm serve lists callable in the next request. Codex defers MCP
// tools for a model it knows, also under aipm launch: it runs so. aipm
// launch has Claude Code load aipm's tools up front (alwaysLoad), so
// Claude Code runs here as aipm mcp-config sets it up for a human's own
// sessions: the entry it prints, tool search on (ENABLE_TOOL_SEARCH=true:
// its documentation says that, unset, it loads MCP tools up front behind
// an ANTHROPIC_BASE_URL that is not Anthropic's).
func TestToolSearchLoadsEveryTool(t *testing.T) {
	script := func(r *scriptedmodel.Request) scriptedmodel.Turn {
		if len(r.Results) > 0 {
			return scriptedmodel.Turn{Text: "done"}
		}
		if call, ok := scriptedmodel.SearchHintCall(r); ok {
			return scriptedmodel.Turn{Calls: []scriptedmodel.Call{call}}
		}
		return scriptedmodel.Turn{Text: "no search to make"}
	}
	for _, client := range []string{"claude", "codex"} {
		t.Run(client, func(t *testing.T) {
			t.Parallel()
			e := newE2E(t, client, script)
			tools := e.servedTools()
			if client == "codex" {
				e.launch(nil)
			} else {
				entry := e.aipmCLI("mcp-config", "claude")
				e.run([]string{"ENABLE_TOOL_SEARCH=true", "AIPM_AGENT_ID=coder", "AIPM_PASSKEY_FILE=" + filepath.Join(e.dir, ".ai-pm", "credentials", "coder.passkey")},
					filepath.Join(e.bin, "claude"), "-p", "You are coder, an agent of this aipm project: work with its tools.",
					"--mcp-config", entry, "--strict-mcp-config", "--allowedTools", "mcp__aipm", "--output-format", "json")
			}
			reqs := e.model.Requests()
			if len(reqs) == 0 {
				t.Fatalf("%s made no model request", client)
			}
			first := reqs[0]
			if len(missing(first, tools)) == 0 {
				t.Fatalf("%s offers every aipm tool up front: nothing is deferred, so this test tests nothing", client)
			}
			call, ok := scriptedmodel.SearchHintCall(first)
			if !ok {
				t.Fatalf("%s's first request gives the model no search to make (aipm's instructions as it shows them: %q)", client, scriptedmodel.ServerInstructions(first, "aipm"))
			}
			if len(reqs) < 2 {
				t.Fatalf("%s sent no request after the search %v", client, call.Input)
			}
			if lost := missing(reqs[1], tools); len(lost) > 0 {
				t.Errorf("%s: the search the instructions give (%q, called as %s %v) loads %d of aipm's %d tools, not %s",
					client, scriptedmodel.Hint(first), call.Name, call.Input, len(tools)-len(lost), len(tools), strings.Join(lost, ", "))
			}
		})
	}
}
