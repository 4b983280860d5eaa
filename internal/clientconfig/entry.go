package clientconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"aipm/fsstore"
	"aipm/internal/shell"
)

// Server is how an MCP client starts `aipm serve` for one project.
type Server struct {
	Command        string            `json:"command" toml:"command"`
	Args           []string          `json:"args" toml:"args"`
	Env            map[string]string `json:"env,omitempty" toml:"env,omitempty"`
	EnvVars        []string          `json:"-" toml:"env_vars,omitempty"`
	ToolTimeoutSec int               `json:"-" toml:"tool_timeout_sec"`
	// ApprovalMode "approve": Codex runs aipm's tools without asking, which
	// `codex exec` (approval policy never) needs to call any tool that writes.
	ApprovalMode string `json:"-" toml:"default_tools_approval_mode"`
	// HookCommand is the command word of aipm's client hooks (HookWord).
	HookCommand string `json:"-" toml:"-"`
	// Remote: the entry runs ssh to the home machine (mcp-config --remote),
	// with no credential variables and no hooks.
	Remote bool `json:"-" toml:"-"`
}

// ServerName is the name of aipm's entry in every client's config; Claude
// Code names its tools mcp__aipm__<tool>.
const ServerName = "aipm"

// ServeArgs start the server with no --dir: clients start it in the
// project (or one of its directories), and aipm serve finds the project
// like every aipm command, so the entry holds no path and survives a
// clone or a move.
var ServeArgs = []string{"serve"}

// CredentialVars are what aipm serve reads its agent's credential from
// (aipm watch's starter sets AIPM_PASSKEY_FILE; AIPM_PASSKEY is accepted
// for other launchers).
var CredentialVars = []string{fsstore.EnvAgentID, fsstore.EnvPasskeyFile, fsstore.EnvPasskey}

// AipmCommand is the command word of the entries mcp-config makes (the
// server's command and the hooks' "<word> hook ..."): "aipm" when an aipm
// is on PATH, so that the entries hold no path of this machine (warning
// when that aipm is not this binary: the client will start the one on
// PATH); else this binary's absolute path, with a warning on stderr.
// path is the PATH value.
func AipmCommand(path string, stderr io.Writer) string {
	exe, err := os.Executable()
	if err == nil {
		if resolved, err := filepath.EvalSymlinks(exe); err == nil {
			exe = resolved
		}
	}
	onPath := shell.LookPath(path, ServerName)
	switch {
	case onPath != "" && exe != "" && !shell.SameFile(onPath, exe):
		fmt.Fprintf(stderr, "aipm: warning: the entries start the aipm on PATH, %s, which is not this binary (%s)\n", onPath, exe)
		return ServerName
	case onPath != "":
		return ServerName
	case exe == "":
		fmt.Fprintf(stderr, "aipm: warning: aipm is not on PATH and this binary's path is unknown (%v): put aipm on PATH\n", err)
		return ServerName
	case strings.Contains(exe, string(filepath.Separator)+"go-build"):
		fmt.Fprintf(stderr, "aipm: warning: %s is a temporary build (go run): install aipm with go install and run mcp-config again\n", exe)
	default:
		fmt.Fprintf(stderr, "aipm: warning: aipm is not on PATH, so the entries name %s, which break if the binary moves: put aipm on PATH and run mcp-config again\n", exe)
	}
	return exe
}

// FileChange is what --write does to one file: its path and a sentence,
// or an empty what when the file already holds the entry; old and data
// are its content before and after (old nil when it is created).
type FileChange struct {
	path    string // absolute
	name    string // relative to the project, for messages
	created bool
	what    string
	old     []byte
	data    []byte
}

// Change makes c the change of its file to data, what being the sentence
// that says what it did ("added the aipm server").
func (c *FileChange) Change(what string, data []byte) {
	c.what, c.data = what, data
}

// printChanges says what --write changed, file by file, with paths
// relative to the working directory when they are below it.
func printChanges(w io.Writer, project string, changes []FileChange) error {
	wd, _ := os.Getwd()
	var out bytes.Buffer
	changed := false
	for _, c := range changes {
		path := c.path
		if rel, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(rel, "..") {
			path = rel
		}
		switch {
		case c.what == "":
			fmt.Fprintf(&out, "unchanged %s: it already holds aipm's entry\n", path)
		case c.created:
			changed = true
			fmt.Fprintf(&out, "created %s: %s\n", path, c.what)
		default:
			changed = true
			fmt.Fprintf(&out, "updated %s: %s\n", path, c.what)
		}
	}
	if !changed {
		fmt.Fprintf(&out, "nothing to change: %s is already set up\n", filepath.Base(project))
	}
	_, err := io.Copy(w, &out)
	return err
}

// ReadOptional reads path; a missing file is empty.
func ReadOptional(path string) ([]byte, bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	return data, err == nil, err
}
