package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"aipm/fsstore"
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
// saw. AIPM_FAKE_DENY=Write,Bash makes the fake claude report those tool
// calls as refused in its -p JSON result (permission_denials).
// AIPM_FAKE_MODE plays a client that cannot work: "offline" one that
// cannot reach its model (it says so, as Codex does, and waits for ever),
// "notools" one that started without aipm's tools (it exits 0 having done
// nothing, as Claude Code does when its MCP server connects late).

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
	dir, _ := os.Getwd()
	rec := fakeClientRecord{Client: client, Args: args, Dir: dir, Agent: os.Getenv(fsstore.EnvAgentID),
		PasskeyFile: os.Getenv(fsstore.EnvPasskeyFile) != "", Passkey: os.Getenv(fsstore.EnvPasskey) != "", Purpose: os.Getenv(fsstore.EnvPurpose)}
	if err := appendFakeRecord(rec); err != nil {
		fmt.Fprintf(os.Stderr, "fake %s: %v\n", client, err)
		return 1
	}
	switch os.Getenv("AIPM_FAKE_MODE") {
	case "offline":
		fmt.Fprintf(os.Stderr, "fake %s: stream error: error sending request for url (http://127.0.0.1:9/v1/responses)\n", client)
		fmt.Fprintln(os.Stderr, "\x1b[2mReconnecting… waiting for network\x1b[0m")
		select {}
	case "notools":
		fmt.Println("I have no tools to call aipm with.")
		return 0
	}
	var server []string
	var err error
	switch client {
	case "claude":
		server, err = claudeServerOf(args)
	case "codex":
		server, err = codexServerOf(args)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "fake %s: %v\n", client, err)
		return 1
	}
	err = sim.Run(context.Background(), sim.Options{Server: server, ProjectDir: dir, Agent: rec.Agent, Purpose: rec.Purpose,
		Out: os.Stderr, ServeStderr: os.Stderr})
	if err != nil {
		fmt.Fprintf(os.Stderr, "fake %s: %v\n", client, err)
		return 1
	}
	if client == "claude" && hasArg(args, "--output-format", "json") {
		var denials []map[string]string
		for _, tool := range strings.Split(os.Getenv("AIPM_FAKE_DENY"), ",") {
			if tool != "" {
				denials = append(denials, map[string]string{"tool_name": tool})
			}
		}
		json.NewEncoder(os.Stdout).Encode(map[string]any{"type": "result", "result": "fake claude: done", "permission_denials": denials})
	}
	return 0
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
