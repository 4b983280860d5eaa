// Package launch is how aipm starts Claude Code or Codex as one agent of a
// project. An agent that is a real client (DESIGN 19) has the command
//
//	command = ["aipm", "launch", "claude"]
//
// in config.toml, with options after the client's name (--model, --access,
// and the client's own arguments after --). aipm watch runs it like any
// command; aipm launch (Run) starts the client headless with everything it
// needs: aipm's MCP entry, the hooks, the permissions aipm's tools and the
// agent's work need, and an opening prompt. The credential stays in the
// environment (AIPM_PASSKEY_FILE, the saved passkey), never on a command
// line or in the prompt. Nothing is written to the client's own settings.
//
//   - launch.go: what a command line says (Spec, SpecOf, Flags) and the
//     opening prompt; each client's own command line, output and terms
//     are its file in internal/clients, reached through its registry.
//   - run.go: the client started and waited for (Run); what it refused
//     told to the agent's human.
//   - refusals.go: the client's refusals (clients.Output) told apart
//     from the calls aipm's own hook denied, and the sentence with the fix.
//   - starts.go, problems.go: what aipm watch starts for an agent and what
//     it may do (Starts), and what stops it (StartProblems, for doctor).
//   - checks.go: what the clients need of the machine (CheckClients, for
//     doctor): not root for Claude Code's full access, a version as new as
//     the one tested, a model endpoint there, its sandbox's programs.
package launch

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"aipm/internal/clientconfig"
	"aipm/internal/clients"
	"aipm/internal/shell"
)

// Access levels: what a launched client may do beyond aipm's tools.
const (
	AccessRead    = clients.AccessRead    // read the project; no edit (Codex: commands that do not write)
	AccessProject = clients.AccessProject // edit files and run commands inside the project
	AccessFull    = clients.AccessFull    // do anything, without asking
)

// AccessLevels are the access levels, narrowest first.
var AccessLevels = []string{AccessRead, AccessProject, AccessFull}

// Spec is what an "aipm launch" command line says.
type Spec struct {
	Client string   // a registered client's name (clients.Names)
	Model  string   // the client's --model, "" for its default
	Access string   // AccessRead, AccessProject (default) or AccessFull
	Agent  string   // --agent; "" takes $AIPM_AGENT_ID
	Extra  []string // the client's own arguments, after --
}

// Flags are aipm launch's flags, bound to spec: the command and
// SpecOf parse a command line with the same set.
func Flags(spec *Spec) *pflag.FlagSet {
	fs := pflag.NewFlagSet("launch", pflag.ContinueOnError)
	fs.StringVar(&spec.Model, "model", "", "the client's model (its --model); default: the client's own")
	fs.StringVar(&spec.Access, "access", AccessProject, "what the agent may do: read (the project, no edit; Codex also runs commands that do not write), project (edit files and run commands inside the project), full (do anything, without asking)")
	fs.StringVar(&spec.Agent, "agent", "", "the agent to start (default $AIPM_AGENT_ID, as aipm watch sets it)")
	return fs
}

// SpecOf reads an agent's command: ok is false when it is not
// "aipm launch ..." (any path to aipm counts); err says what is wrong
// with one that is.
func SpecOf(command []string) (spec Spec, ok bool, err error) {
	if len(command) < 2 || filepath.Base(command[0]) != clientconfig.ServerName || command[1] != "launch" {
		return Spec{}, false, nil
	}
	fs := Flags(&spec)
	fs.SetOutput(nopWriter{})
	rest := command[2:]
	if err := fs.Parse(rest); err != nil {
		return spec, true, fmt.Errorf("aipm launch: %v", err)
	}
	args := fs.Args()
	dash := fs.ArgsLenAtDash()
	if dash < 0 {
		dash = len(args)
	}
	if dash != 1 {
		return spec, true, fmt.Errorf("aipm launch needs exactly one client before --, %s (got %q)", clients.Known(""), args[:dash])
	}
	spec.Client, spec.Extra = args[0], args[dash:]
	return spec, true, spec.Check()
}

// Check says what is wrong with spec, in one sentence.
func (spec Spec) Check() error {
	if _, ok := clients.Get(spec.Client); !ok {
		return fmt.Errorf("aipm launch: %w", clients.Unknown(spec.Client))
	}
	if !slices.Contains(AccessLevels, spec.Access) {
		return fmt.Errorf("aipm launch: --access %q is unknown: use read, project or full", spec.Access)
	}
	return nil
}

// Command is spec as an agent's command in config.toml: only what differs
// from the defaults, so that it reads short.
func (spec Spec) Command() []string {
	cmd := []string{clientconfig.ServerName, "launch", spec.Client}
	if spec.Model != "" {
		cmd = append(cmd, "--model", spec.Model)
	}
	if spec.Access != "" && spec.Access != AccessProject {
		cmd = append(cmd, "--access", spec.Access)
	}
	if len(spec.Extra) > 0 {
		cmd = append(append(cmd, "--"), spec.Extra...)
	}
	return cmd
}

// May is what an agent launched with spec may do, for agent list and
// doctor ("it may ..."): each client's own terms of its access level.
func (spec Spec) May() string {
	c, _ := clients.Get(spec.Client)
	if c.May == nil {
		return ""
	}
	return c.May(spec.Access)
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }

// Missing is the one sentence for a client that is not on PATH, or
// "" when it is there.
func Missing(path string, spec Spec) string {
	c, ok := clients.Get(spec.Client)
	if !ok || shell.LookPath(path, c.Program) != "" {
		return ""
	}
	return fmt.Sprintf("%s is not on PATH, so aipm watch cannot start this agent: %s, or put it on the PATH aipm watch runs with", c.Program, c.Install)
}

// launchPrompt is the opening prompt: who the agent is, where, and the
// aipm loop. It names no secret.
func launchPrompt(spec Spec, agent, project, dir, purpose string) string {
	tool := func(name string) string { return name }
	if c, ok := clients.Get(spec.Client); ok {
		tool = c.ToolName
	}
	var b strings.Builder
	fmt.Fprintf(&b, "You are %s, an AI agent of the aipm project %q in %s", agent, project, dir)
	if purpose != "" {
		fmt.Fprintf(&b, ", started for your %s session", purpose)
	}
	fmt.Fprintf(&b, ". aipm coordinates your team through its MCP server %q. Call %s with agent_id %q (no passkey: the server holds it), "+
		"then call %s and do exactly what its instruction says, again and again, until it says exit. "+
		"Do the work itself with your own tools in this project; say what you did in the reports aipm asks for.",
		clientconfig.ServerName, tool("authenticate"), agent, tool("get_next_action"))
	return b.String()
}

// run is spec's client run: what its client's Launch is given.
func (spec Spec) run(exe, hookWord, prompt string, getenv func(string) string) clients.Run {
	return clients.Run{Access: spec.Access, Model: spec.Model, Extra: spec.Extra, Exe: exe, HookWord: hookWord,
		Prompt: prompt, Agent: spec.Agent, Getenv: getenv}
}

// launchArgs is spec's client's command line (without the program): exe
// is this aipm's absolute path (the MCP server and the hooks run it).
func launchArgs(spec Spec, exe, hookWord, prompt string) []string {
	c, _ := clients.Get(spec.Client)
	return c.Launch(spec.run(exe, hookWord, prompt, func(string) string { return "" })).Args
}
