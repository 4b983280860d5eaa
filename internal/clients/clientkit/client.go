// Package clientkit is what every agent CLI aipm knows is made of (the
// type Client and its parts: Run, Command, Output, Refusal, Dialect,
// Answer, Config), aipm's access levels and hook events, and the helpers
// several clients share (hookjson.go: the hook answers Claude Code's
// dialect writes, the file a writing tool names). Each client's folder
// beside it (internal/clients/claude, ...) fills in a Client; the
// registry, internal/clients, lists them.
package clientkit

import (
	"encoding/json"
	"io"
	"strings"

	"aipm/internal/clientconfig"
)

// Access levels: what a launched client may do beyond aipm's tools.
const (
	AccessRead    = "read"    // read the project; no edit
	AccessProject = "project" // edit files and run commands inside the project
	AccessFull    = "full"    // do anything, without asking
)

// aipm's hook events: each client's own event names map onto them
// (Dialect.Events).
const (
	SessionStart     = "SessionStart"
	UserPromptSubmit = "UserPromptSubmit"
	PreToolUse       = "PreToolUse"
	PostToolUse      = "PostToolUse"
	Stop             = "Stop"
)

// Events are aipm's hook events, in the order of a turn.
var Events = []string{SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, Stop}

// Client is everything aipm knows of one agent CLI. Every func field is
// set for every registered client, except those marked optional.
type Client struct {
	Name    string // the word aipm's commands take: "claude"
	Title   string // what its human calls it: "Claude Code"
	Program string // the executable looked up on PATH
	Package string // its npm package, for the update aipm doctor suggests
	// Tested is the version aipm's end-to-end tests drive
	// (testdata/realclients/package.json pins it): aipm doctor warns of
	// an older one.
	Tested string
	// Install is how to get it, for the sentence when it is missing.
	Install string

	// Launch is the client's command line (without the program) and the
	// environment it adds, for one headless run.
	Launch func(Run) Command
	// Output reads what the client prints on stdout as it runs, writing
	// the text for the run's log to log, and says at the end which tool
	// calls it refused.
	Output func(r Run, log io.Writer) Output
	// Hooks is how the client runs aipm's hooks and reads their answers.
	Hooks Dialect
	// Config is what aipm mcp-config prints and writes for it.
	Config Config
	// Trust is why the client will ignore aipm's entries in project (what
	// the user must still do after mcp-config --write), or "".
	Trust func(getenv func(string) string, project string) string
	// Endpoint is where the client sends its model requests, and with
	// which credential, in getenv's environment with its own arguments
	// extra.
	Endpoint func(getenv func(string) string, extra []string) clientconfig.Endpoint
	// ToolName is how the client names aipm's tool to its model (for the
	// opening prompt).
	ToolName func(tool string) string
	// May is what an agent launched with access may do, in the client's
	// own terms ("it may ...").
	May func(access string) string

	// RootProblem is the one sentence, with the fix, for agent's client
	// that will refuse to start with access as root (getenv is the
	// environment it gets), or "". Optional: nil never refuses.
	RootProblem func(access, agent string, root bool, getenv func(string) string) string
	// Sandbox are the programs the client's sandbox needs at access on
	// this machine, and the warning's sentence when programs (those of
	// them missing) are not on PATH. Optional.
	Sandbox func(access string) (programs []string, warning func(agents string, missing []string) string)
	// RefusedBy is what refuses a tool call in the client ("its
	// permissions", "its sandbox"), for the sentence its human reads.
	RefusedBy string
	// Widen is the fix that lets tools, refused under --access project,
	// run: set is "aipm agent set <agent>", root whether aipm watch runs
	// as root.
	Widen func(set string, r Run, tools []string, root bool) string
	// Unhooked says whether command, an agent's own command (not aipm
	// launch), starts this client without aipm's hooks in projectDir, so
	// that an interrupt cannot stop it between tool calls. Optional.
	Unhooked func(projectDir string, command []string) bool
}

// Run is one headless run of a client, as aipm launch starts it.
type Run struct {
	Access     string   // AccessRead, AccessProject or AccessFull
	Model      string   // the client's --model, "" for its default
	Extra      []string // the client's own arguments, after --
	Exe        string   // this aipm's absolute path (its MCP server)
	HookWord   string   // the command word of aipm's hooks (clientconfig.HookWord)
	Prompt     string   // the opening prompt
	Agent      string   // the agent it runs as
	ProjectDir string   // the project, its working directory
	// Scratch is a directory aipm launch made for this run alone, removed
	// when the client has exited (Copilot CLI's plugin of aipm's hooks).
	Scratch string
	// StateDir is a folder aipm owns for this agent's client, kept
	// between runs (under the project's .ai-pm/logs/<agent>/, which the
	// watcher does not watch): where a client that reads its MCP servers
	// and hooks only from a settings file in its home (Gemini CLI) gets a
	// home of aipm's. "" when there is none (a dry run).
	StateDir string
	Getenv   func(string) string
}

// Command is a client's command line for one run: its arguments and the
// environment entries ("KEY=value") added to aipm launch's own.
type Command struct {
	Args []string
	Env  []string
	// Files are written (whole, atomically) before the client starts,
	// each under Run.StateDir or Run.Scratch.
	Files []File
	// Owned are directories the run's Files are all of: whatever else is
	// in them is removed before the client starts (a file the client
	// loads every one of, such as Gemini CLI's policies, that an earlier
	// run or the agent itself left there).
	Owned []string
	// Stdin is given on the client's standard input ("": none), for a
	// client that reads its prompt there.
	Stdin string
}

// File is one file a client's run needs written before it starts.
type File struct {
	Path string // absolute
	Data []byte
}

// Output reads a client's stdout while it runs and, once the client has
// exited, says which tool calls the client itself refused: its
// permissions, its sandbox (the calls aipm's own hook denied included:
// aipm launch tells them apart).
type Output interface {
	io.Writer
	Refusals() []Refusal
}

// Refusal is one tool call a client refused.
type Refusal struct {
	ID   string // the client's id of the call ("" when it gives none)
	Tool string // the tool, as the client names it
	// Said is what the client said of it ("Read-only file system"), ""
	// when it says only that it refused.
	Said string
}

// Dialect is a client's side of aipm's hooks: the entries it runs, the
// events it sends, and how it reads an answer.
type Dialect struct {
	// Entries are aipm's hook entries for the client's settings file or
	// command line, word being the hooks' command word (HookWord).
	Entries func(word string) []clientconfig.HookEvent
	// Events maps the client's event names to aipm's (SessionStart, ...).
	Events map[string]string
	// Unsupported are aipm's events the client has no hook for, each with
	// why.
	Unsupported map[string]string
	// Wake is whether the client has an idle hook that wakes it
	// (aipm hook --wake: Claude Code's asyncRewake Stop hook); NoWake is
	// the sentence for --wake given to a client without one.
	Wake   bool
	NoWake string
	// OwnToolPrefix starts the names the client gives aipm's own MCP
	// tools: their responses carry aipm's notices already.
	OwnToolPrefix string
	// WritingTools are the client's file-writing tools, each with the
	// files a call's input names.
	WritingTools map[string]func(input json.RawMessage) []string
	// Deny refuses a tool call (at aipm's PreToolUse), with reason shown
	// to the model.
	Deny func(reason string) Answer
	// Context adds text to the model's context at event, one of aipm's.
	Context func(event, text string) Answer
	// Block keeps the model working at Stop, with reason as what to do.
	Block func(reason string) Answer
}

// Answer is what a hook process prints for its client, and its exit code.
type Answer struct {
	Stdout []byte
	Stderr string
	Exit   int
}

// Event is aipm's name of the client's event name, "" for one aipm does
// not answer.
func (d Dialect) Event(name string) string { return d.Events[name] }

// Own says whether tool, as the client names it, is one of aipm's.
func (d Dialect) Own(tool string) bool {
	return d.OwnToolPrefix != "" && strings.HasPrefix(tool, d.OwnToolPrefix)
}

// Config is what aipm mcp-config does for a client.
type Config struct {
	// Doc is the one document it prints for s.
	Doc func(s clientconfig.Server) ([]byte, error)
	// Note is what it says about the document on stderr.
	Note func(s clientconfig.Server) string
	// Write is how --write merges s (and aipm's hooks) into the project's
	// files: the changes to make, all or none (clientconfig.Write).
	Write func(project string, s clientconfig.Server) ([]clientconfig.FileChange, error)
	// URLDoc is the document for aipm serve --http at url, its bearer
	// token read from the variable tokenVar.
	URLDoc func(url, tokenVar string) ([]byte, error)
}
