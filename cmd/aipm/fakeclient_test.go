package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"aipm/fsstore"
	"aipm/internal/launch"
	"aipm/sim"
)

// The tests' claude and codex (TestMain puts them on PATH as programs):
// stand-ins for Claude Code and Codex that record how they were started
// and then behave like an agent, with no model: aipm sim against the MCP
// server entry their command line gave them, which holds the credential.
//
// Each start writes N.json, the first N free, in the directory
// $AIPM_FAKE_CLIENT_LOG (default fake-clients in the working directory): the client, its
// arguments, its working directory, and which credential variables it
// saw. --version prints the pinned version (testdata/realclients), or
// $AIPM_FAKE_VERSION, as the real client prints its own.
//
// The fake claude, as Claude Code 2.1.332 does:
//   - refuses --permission-mode bypassPermissions to root (the user
//     $AIPM_TEST_EUID names) unless IS_SANDBOX=1: a line on stderr, exit 1;
//   - AIPM_FAKE_DENY=Write,Bash: reports those tool calls as refused by its
//     permissions in its -p JSON result (permission_denials);
//   - AIPM_FAKE_TOOLS=Write:src/x.go,Bash: its model makes those tool calls
//     (a file for the writing tools) before its aipm work, each through the
//     PreToolUse hook of its --settings; a call the hook denies is in
//     permission_denials too;
//   - AIPM_FAKE_BLOCKED_BY=lead: between two steps of its task work the
//     human lead blocks the task, and then its model makes a Bash call
//     (through the hook).
//
// The fake codex, with --json, prints Codex 0.171.0's events
// (thread.started, turn.started, item.completed, turn.completed);
// AIPM_FAKE_REFUSE=patch,write makes its sandbox refuse an apply_patch
// and a command's write, which, as in Codex 0.171.0, no event shows and
// its session record ($CODEX_HOME/sessions/.../rollout-*-<thread>.jsonl)
// does.
//
// AIPM_FAKE_MODE plays a client that cannot work: "offline" one that
// cannot reach its model (it says so, as Codex does, and waits for ever),
// "notools" one that started without aipm's tools (it exits 0 having done
// nothing, as Claude Code does when its MCP server connects late),
// "unreachable" one that gives up on its model (exit 1, as Claude Code
// does after its retries).

// fakeClientRecord is one start of a fake client.
type fakeClientRecord struct {
	Client      string   `json:"client"`
	Args        []string `json:"args"`
	Dir         string   `json:"dir"`
	Agent       string   `json:"agent"`
	PasskeyFile bool     `json:"passkeyFile"`
	Passkey     bool     `json:"passkey"`
	Purpose     string   `json:"purpose"`
}

func fakeClientMain(client string) int {
	args := os.Args[1:]
	if len(args) == 1 && args[0] == "--version" {
		fakeVersion(client)
		return 0
	}
	if err := fakeClientRun(client, args); err != nil {
		fmt.Fprintf(os.Stderr, "fake %s: %v\n", client, err)
		return 1
	}
	return 0
}

// fakeVersion prints the client's --version line.
func fakeVersion(client string) {
	v := launch.Tested(client) // the pins of testdata/realclients
	if env := os.Getenv("AIPM_FAKE_VERSION"); env != "" {
		v = env
	}
	if client == "claude" {
		fmt.Printf("%s (Claude Code)\n", v)
	} else {
		fmt.Printf("codex-cli %s\n", v)
	}
}

// fakeCannotWork plays a client that cannot work (AIPM_FAKE_MODE).
func fakeCannotWork(client, mode string) error {
	switch mode {
	case "offline":
		fmt.Fprintf(os.Stderr, "fake %s: stream error: error sending request for url (http://127.0.0.1:9/v1/responses)\n", client)
		fmt.Fprintln(os.Stderr, "\x1b[2mReconnecting… waiting for network\x1b[0m")
		select {}
	case "notools":
		fmt.Println("I have no tools to call aipm with.")
		return nil
	case "unreachable":
		return errors.New("API Error: Unable to connect to API (ECONNREFUSED)")
	}
	return fmt.Errorf("AIPM_FAKE_MODE %q is unknown: use offline, notools or unreachable", mode)
}

// fakeClientRun is one start of the fake client: recorded, then an agent
// (aipm sim) against the MCP server its command line names, then its
// result on stdout.
func fakeClientRun(client string, args []string) error {
	dir, _ := os.Getwd()
	rec := fakeClientRecord{Client: client, Args: args, Dir: dir, Agent: os.Getenv(fsstore.EnvAgentID),
		PasskeyFile: os.Getenv(fsstore.EnvPasskeyFile) != "", Passkey: os.Getenv(fsstore.EnvPasskey) != "", Purpose: os.Getenv(fsstore.EnvPurpose)}
	if err := appendFakeRecord(rec); err != nil {
		return err
	}
	if mode := os.Getenv("AIPM_FAKE_MODE"); mode != "" {
		return fakeCannotWork(client, mode)
	}
	serverOf := codexServerOf
	if client == "claude" {
		if hasArg(args, "--permission-mode", "bypassPermissions") && fakeRoot() && os.Getenv("IS_SANDBOX") != "1" {
			return errors.New("--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons")
		}
		serverOf = claudeServerOf
	}
	server, err := serverOf(args)
	if err != nil {
		return err
	}
	model := &fakeModel{client: client, args: args, dir: dir}
	for _, call := range strings.Split(os.Getenv("AIPM_FAKE_TOOLS"), ",") {
		if tool, file, _ := strings.Cut(call, ":"); tool != "" {
			model.toolCall(tool, file)
		}
	}
	opts := sim.Options{Server: server, ProjectDir: dir, Agent: rec.Agent, Purpose: rec.Purpose, Out: os.Stderr, ServeStderr: os.Stderr}
	if human := os.Getenv("AIPM_FAKE_BLOCKED_BY"); human != "" {
		opts.Between = func(ctx context.Context, task string, step int) {
			if step == 0 {
				model.blockedBy(human, task)
				model.toolCall("Bash", "")
			}
		}
	}
	if err := sim.Run(context.Background(), opts); err != nil {
		return err
	}
	if model.err != nil {
		return model.err
	}
	return model.result()
}

// result is what the fake client prints when its work is done: Claude
// Code's -p JSON result (its permission_denials: the hook's denials and
// AIPM_FAKE_DENY's), Codex's --json events.
func (m *fakeModel) result() error {
	switch {
	case m.client == "claude" && hasArg(m.args, "--output-format", "json"):
		for i, tool := range strings.Split(os.Getenv("AIPM_FAKE_DENY"), ",") {
			if tool != "" {
				m.denials = append(m.denials, map[string]any{"tool_name": tool, "tool_use_id": fmt.Sprintf("toolu_deny%d", i), "tool_input": map[string]any{}})
			}
		}
		if m.denials == nil {
			m.denials = []map[string]any{}
		}
		return json.NewEncoder(os.Stdout).Encode(map[string]any{"type": "result", "subtype": "success", "result": "fake claude: done", "permission_denials": m.denials})
	case m.client == "codex" && slices.Contains(m.args, "--json"):
		return fakeCodexEvents(os.Stdout)
	}
	return nil
}

// fakeRoot says whether the fake client runs as root: the user
// $AIPM_TEST_EUID names, else its own.
func fakeRoot() bool {
	if uid, err := strconv.Atoi(os.Getenv(envTestEUID)); err == nil {
		return uid == 0
	}
	return os.Geteuid() == 0
}

// fakeModel is what the fake client's model does besides aipm's tools:
// its own tool calls, through the client's PreToolUse hook.
type fakeModel struct {
	client  string
	args    []string
	dir     string
	calls   int
	denials []map[string]any // as claude -p's permission_denials
	err     error
}

// toolCall is one call of the client's tool (file: the file a writing
// tool writes), which its PreToolUse hook may deny, as Claude Code runs
// it: the command of --settings' hooks.PreToolUse, through sh, the event
// on stdin.
func (m *fakeModel) toolCall(tool, file string) {
	m.calls++
	id := fmt.Sprintf("toolu_fake%d", m.calls)
	input := map[string]any{"command": "make test"}
	if file != "" {
		input = map[string]any{"file_path": filepath.Join(m.dir, file), "content": "x"}
	}
	command, err := preToolUseHook(m.args)
	if err != nil {
		m.err = err
		return
	}
	event, _ := json.Marshal(map[string]any{"session_id": "fake-session", "hook_event_name": "PreToolUse", "cwd": m.dir,
		"tool_name": tool, "tool_input": input, "tool_use_id": id})
	cmd := exec.Command("sh", "-c", command)
	cmd.Stdin, cmd.Stderr = strings.NewReader(string(event)), os.Stderr
	out, err := cmd.Output()
	if err != nil {
		m.err = fmt.Errorf("PreToolUse hook %q: %v", command, err)
		return
	}
	var answer struct {
		Specific struct {
			Decision string `json:"permissionDecision"`
		} `json:"hookSpecificOutput"`
	}
	if len(strings.TrimSpace(string(out))) > 0 {
		if err := json.Unmarshal(out, &answer); err != nil {
			m.err = fmt.Errorf("PreToolUse hook printed %q: %v", out, err)
			return
		}
	}
	if answer.Specific.Decision == "deny" {
		m.denials = append(m.denials, map[string]any{"tool_name": tool, "tool_use_id": id, "tool_input": input})
	}
}

// blockedBy has the human block task, as a human does while the agent
// works (aipm task status, without the agent's credential).
func (m *fakeModel) blockedBy(human, task string) {
	cmd := exec.Command("aipm", "task", "status", task, "blocked", "--reason", "the spec changed", "--as", human)
	cmd.Dir = m.dir
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "AIPM_") || k == envTestEUID {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		m.err = fmt.Errorf("block %s as %s: %v: %s", task, human, err, out)
	}
}

// preToolUseHook is the command of the PreToolUse hook claude's
// --settings JSON names.
func preToolUseHook(args []string) (string, error) {
	for i := 0; i+1 < len(args); i++ {
		if args[i] != "--settings" {
			continue
		}
		var settings struct {
			Hooks map[string][]struct {
				Hooks []struct {
					Command string `json:"command"`
				} `json:"hooks"`
			} `json:"hooks"`
		}
		if err := json.Unmarshal([]byte(args[i+1]), &settings); err != nil {
			return "", fmt.Errorf("--settings: %v", err)
		}
		if groups := settings.Hooks["PreToolUse"]; len(groups) > 0 && len(groups[0].Hooks) > 0 {
			return groups[0].Hooks[0].Command, nil
		}
	}
	return "", fmt.Errorf("no PreToolUse hook in --settings")
}

// fakeCodexEvents prints codex exec --json's events of a run that did
// its work, and, for AIPM_FAKE_REFUSE, writes the session record of the
// calls its sandbox refused, as Codex 0.171.0 was seen to (a
// read-only sandbox: "patch rejected: writing is blocked by read-only
// sandbox; rejected by user approval settings", and a command's
// "Read-only file system", neither of them an event).
func fakeCodexEvents(w io.Writer) error {
	thread := fmt.Sprintf("01a236c3-357c-7d22-839e-%012x", time.Now().UnixNano()&0xffffffffffff)
	enc := json.NewEncoder(w)
	enc.Encode(map[string]any{"type": "thread.started", "thread_id": thread})
	enc.Encode(map[string]any{"type": "turn.started"})
	var record []map[string]any
	call := func(id, command, output string) {
		record = append(record,
			map[string]any{"type": "response_item", "payload": map[string]any{"type": "function_call", "name": "exec_command", "arguments": fmt.Sprintf(`{"cmd": %q}`, command), "call_id": id}},
			map[string]any{"type": "response_item", "payload": map[string]any{"type": "function_call_output", "call_id": id, "output": output}})
	}
	for _, what := range strings.Split(os.Getenv("AIPM_FAKE_REFUSE"), ",") {
		switch what {
		case "patch":
			call("call_patch", "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: hello.txt\n+hello\n*** End Patch\nEOF\n",
				"patch rejected: writing is blocked by read-only sandbox; rejected by user approval settings")
		case "write":
			call("call_write", "echo hi > x.txt",
				"Chunk ID: c90313\nWall time: 0.0000 seconds\nProcess exited with code 1\nOriginal token count: 12\nOutput:\n/bin/bash: line 1: x.txt: Read-only file system\n")
		}
	}
	call("call_ls", "ls", "Chunk ID: 9fb65c\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 3\nOutput:\nx.go\n")
	enc.Encode(map[string]any{"type": "item.started", "item": map[string]any{"id": "item_1", "type": "command_execution", "command": "/bin/bash -lc ls", "aggregated_output": "", "exit_code": nil, "status": "in_progress"}})
	enc.Encode(map[string]any{"type": "item.completed", "item": map[string]any{"id": "item_1", "type": "command_execution", "command": "/bin/bash -lc ls", "aggregated_output": "x.go\n", "exit_code": 0, "status": "completed"}})
	enc.Encode(map[string]any{"type": "item.completed", "item": map[string]any{"id": "item_2", "type": "agent_message", "text": "fake codex: done"}})
	enc.Encode(map[string]any{"type": "turn.completed", "usage": map[string]any{"input_tokens": 1, "cached_input_tokens": 0, "output_tokens": 1}})
	home := os.Getenv("CODEX_HOME")
	if home == "" {
		home = filepath.Join(os.Getenv("HOME"), ".codex")
	}
	now := time.Now().UTC()
	dir := filepath.Join(home, "sessions", now.Format("2006"), now.Format("01"), now.Format("02"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	for _, r := range record {
		line, _ := json.Marshal(r)
		b.Write(append(line, '\n'))
	}
	return os.WriteFile(filepath.Join(dir, "rollout-"+now.Format("2006-01-02T15-04-05")+"-"+thread+".jsonl"), []byte(b.String()), 0o644)
}

func appendFakeRecord(rec fakeClientRecord) error {
	dir := os.Getenv("AIPM_FAKE_CLIENT_LOG")
	if dir == "" {
		dir = "fake-clients"
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for n := 0; ; n++ {
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(n)+".json"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		_, err = f.Write(append(data, '\n'))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
}

// hasArg says whether args hold flag followed by value.
func hasArg(args []string, flag, value string) bool {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag && args[i+1] == value {
			return true
		}
	}
	return false
}

// claudeServerOf is the aipm entry of claude's --mcp-config JSON.
func claudeServerOf(args []string) ([]string, error) {
	for i := 0; i+1 < len(args); i++ {
		if args[i] != "--mcp-config" {
			continue
		}
		var cfg struct {
			MCPServers map[string]struct {
				Command string   `json:"command"`
				Args    []string `json:"args"`
			} `json:"mcpServers"`
		}
		if err := json.Unmarshal([]byte(args[i+1]), &cfg); err != nil {
			return nil, fmt.Errorf("--mcp-config: %v", err)
		}
		s, ok := cfg.MCPServers["aipm"]
		if !ok || s.Command == "" {
			return nil, fmt.Errorf("--mcp-config has no aipm server")
		}
		return append([]string{s.Command}, s.Args...), nil
	}
	return nil, fmt.Errorf("no --mcp-config: no aipm server to talk to")
}

// codexServerOf is the aipm entry of codex's -c mcp_servers.aipm.* values.
func codexServerOf(args []string) ([]string, error) {
	var command string
	var cmdArgs []string
	for i := 0; i+1 < len(args); i++ {
		if args[i] != "-c" {
			continue
		}
		key, value, ok := strings.Cut(args[i+1], "=")
		if !ok {
			return nil, fmt.Errorf("-c %q is not key=value", args[i+1])
		}
		var v struct{ V any }
		if _, err := toml.Decode("V = "+value, &v); err != nil {
			return nil, fmt.Errorf("-c %s: the value is not TOML: %v", key, err)
		}
		switch key {
		case "mcp_servers.aipm.command":
			command, _ = v.V.(string)
		case "mcp_servers.aipm.args":
			list, _ := v.V.([]any)
			for _, a := range list {
				s, _ := a.(string)
				cmdArgs = append(cmdArgs, s)
			}
		}
	}
	if command == "" {
		return nil, fmt.Errorf("no -c mcp_servers.aipm.command: no aipm server to talk to")
	}
	return append([]string{command}, cmdArgs...), nil
}
