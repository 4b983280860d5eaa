// Package clients is what aipm knows of each real agent CLI it starts or
// configures (DESIGN 19), one folder a client: its launch arguments and
// the output it prints (the tool calls it refused), its hooks' dialect,
// the files mcp-config writes for it, the trust it records, its model
// endpoint, how it names aipm's tools and what each access level means in
// its terms. The packages that do the work (internal/launch,
// internal/clientconfig, hook, cmd/aipm) keep the mechanics and reach a
// client only through this registry (Get, Names).
//
//   - clients.go: the registry (all, Get, Names), and the names of
//     clientkit's types its callers use (Client, Run, Dialect, ...).
//   - clientkit/: the type Client and its parts, the access levels and
//     hook events, and the helpers several clients share.
//   - claude/: Claude Code; codex/: Codex CLI; gemini/: Gemini CLI;
//     qwen/: Qwen Code; copilot/: GitHub Copilot CLI. Each is one package,
//     its Client and everything of it: launch, output, hooks, mcp-config's
//     documents and merges, trust, endpoint.
//
// A new client is its folder, its entry in all, and its row in the tests.
package clients

import (
	"fmt"
	"strings"

	"aipm/internal/clients/claude"
	"aipm/internal/clients/clientkit"
	"aipm/internal/clients/codex"
	"aipm/internal/clients/copilot"
	"aipm/internal/clients/gemini"
	"aipm/internal/clients/opencode"
	"aipm/internal/clients/qwen"
)

// The types of clientkit, under the names callers know them by.
type (
	// Client is everything aipm knows of one agent CLI (clientkit.Client).
	Client = clientkit.Client
	// Run is one headless run of a client (clientkit.Run).
	Run = clientkit.Run
	// Command is a client's command line for one run (clientkit.Command).
	Command = clientkit.Command
	// File is one file a client's run needs written (clientkit.File).
	File = clientkit.File
	// Output reads a client's stdout (clientkit.Output).
	Output = clientkit.Output
	// Refusal is one tool call a client refused (clientkit.Refusal).
	Refusal = clientkit.Refusal
	// Dialect is a client's side of aipm's hooks (clientkit.Dialect).
	Dialect = clientkit.Dialect
	// Answer is what a hook process prints for its client (clientkit.Answer).
	Answer = clientkit.Answer
	// Config is what aipm mcp-config does for a client (clientkit.Config).
	Config = clientkit.Config
)

// Access levels: what a launched client may do beyond aipm's tools.
const (
	AccessRead    = clientkit.AccessRead    // read the project; no edit
	AccessProject = clientkit.AccessProject // edit files and run commands inside the project
	AccessFull    = clientkit.AccessFull    // do anything, without asking
)

// aipm's hook events: each client's own event names map onto them
// (Dialect.Events).
const (
	SessionStart     = clientkit.SessionStart
	UserPromptSubmit = clientkit.UserPromptSubmit
	PreToolUse       = clientkit.PreToolUse
	PostToolUse      = clientkit.PostToolUse
	Stop             = clientkit.Stop
)

// Events are aipm's hook events, in the order of a turn.
var Events = clientkit.Events

// DefaultHookClient is the client aipm hook answers for when --client is
// not given: Claude Code, whose first entries named none.
const DefaultHookClient = "claude"

// all are the registered clients, in the order of Names.
var all = []Client{
	claude.Client,
	codex.Client,
	gemini.Client,
	opencode.Client,
	qwen.Client,
	copilot.Client,
}

// Get is the client called name.
func Get(name string) (Client, bool) {
	for _, c := range all {
		if c.Name == name {
			return c, true
		}
	}
	return Client{}, false
}

// Names are the registered clients' names, in a fixed order.
func Names() []string {
	names := make([]string, len(all))
	for i, c := range all {
		names[i] = c.Name
	}
	return names
}

// Known is the clients' names for a sentence: "claude or codex",
// "claude, codex or gemini"; with flag ("--client"), each follows it:
// "--client claude or --client codex".
func Known(flag string) string {
	names := Names()
	for i, n := range names {
		if flag != "" {
			names[i] = flag + " " + n
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Unknown is the one sentence for a client name that is not registered.
func Unknown(name string) error {
	return fmt.Errorf("client %q is unknown: use %s", name, Known(""))
}
