package main

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"

	"github.com/spf13/cobra"

	"aipm/fsstore"
	"aipm/internal/launch"
	"aipm/internal/status"
)

type agentSetOptions struct {
	e      *env
	Agent  string
	Change fsstore.AgentChange
	// Client, when set, rewrites the agent's command as aipm launch's
	// (clientFlags.spec over the command it has).
	Client func(current []string) ([]string, error)
	JSON   bool
}

// agentSetFlags are agent set's value flags, in the order of AgentKeys.
var agentSetFlags = []string{"--name", "--type", "--role", "--parent", "--command", "--client"}

func newCmdAgentSet(e *env, runF func(*agentSetOptions) error) *cobra.Command {
	o := &agentSetOptions{e: e}
	var name, typ, role, parent, command string
	var client clientFlags
	c := &cobra.Command{
		Use:   "set ID [--name N] [--type ai|human] [--role R] [--parent P] [--command C]",
		Short: "Change an agent's name, type, role, parent or command in config.toml",
		Long: `Change the values of an agent's [[agents]] entry in .ai-pm/config.toml: only the
lines of the keys that change are rewritten, and comments and the rest of the
file are kept. An empty value (--parent "", --command "") removes the key.
A change that would leave an invalid config is refused and nothing is written:
an unknown parent, a parent that already answers to the agent (a cycle), a
human with a command.

--client CLIENT (with --model, --access, --client-arg) makes the agent a
real client that aipm watch starts headless (aipm launch); on an agent that is
one already, --model, --access or --client-arg alone change just that.

An AI agent made a human loses its passkey (refused while a session of it is
live); a human made an AI agent needs one: run aipm agent passkey ID.`,
		Example: `  aipm agent set coder --parent lead
  aipm agent set coder --client claude --model opus
  aipm agent set coder --access full
  aipm agent set lead --role manager --name "Project Lead" --json`,
		Args: argsExactly(1, "exactly one agent id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Agent = args[0]
			if err := fsstore.CheckAgentID(o.Agent); err != nil {
				return asUsage(err)
			}
			f := cmd.Flags()
			for _, v := range []struct {
				flag string
				to   **string
				val  *string
			}{{"name", &o.Change.Name, &name}, {"type", &o.Change.Type, &typ}, {"role", &o.Change.Role, &role}, {"parent", &o.Change.Parent, &parent}} {
				if f.Changed(v.flag) {
					*v.to = v.val
				}
			}
			if f.Changed("command") {
				fields := strings.Fields(command)
				o.Change.Command = &fields
			}
			if client.set(cmd) {
				if f.Changed("command") {
					return usageError("agent set: give --client or --command, not both: --client writes the command")
				}
				o.Client = func(current []string) ([]string, error) {
					base, _, _ := launch.SpecOf(current)
					spec, err := client.spec(cmd, base)
					if err != nil {
						return nil, err
					}
					return spec.Command(), nil
				}
			}
			if o.Change == (fsstore.AgentChange{}) && o.Client == nil {
				return usageError("agent set needs at least one of %s: see aipm agent set --help", strings.Join(agentSetFlags, ", "))
			}
			if runF != nil {
				return runF(o)
			}
			return agentSetRun(cmd, o)
		},
	}
	c.ValidArgsFunction = e.completeAgents(0, "")
	f := c.Flags()
	f.StringVar(&name, "name", "", "display name (\"\" removes it)")
	f.StringVar(&typ, "type", "", "ai or human")
	f.StringVar(&role, "role", "", "worker or manager")
	f.StringVar(&parent, "parent", "", "id of the agent this one answers to (\"\" removes it)")
	f.StringVar(&command, "command", "", "what aipm watch starts when the agent has work, split at spaces (\"\" removes it)")
	f.BoolVar(&o.JSON, "json", false, "print {id, changed, agent} as JSON")
	client.register(c)
	c.RegisterFlagCompletionFunc("type", cobra.FixedCompletions([]string{"ai", "human"}, cobra.ShellCompDirectiveNoFileComp))
	c.RegisterFlagCompletionFunc("role", cobra.FixedCompletions([]string{"worker", "manager"}, cobra.ShellCompDirectiveNoFileComp))
	c.RegisterFlagCompletionFunc("parent", e.completeAgents(-1, ""))
	return c
}

// agentChangeJSON is one changed key in agent set --json.
type agentChangeJSON struct {
	Key  string `json:"key"`
	From any    `json:"from"`
	To   any    `json:"to"`
}

func agentSetRun(cmd *cobra.Command, o *agentSetOptions) error {
	store, cfg, err := o.e.open()
	if err != nil {
		return err
	}
	if err := agentRef(cfg, o.Agent, "agent"); err != nil {
		return err
	}
	if p := o.Change.Parent; p != nil {
		if err := agentRef(cfg, *p, "--parent"); err != nil {
			return err
		}
	}
	if o.Client != nil {
		current, _ := cfg.Agent(o.Agent)
		command, err := o.Client(current.Command)
		if err != nil {
			return err
		}
		o.Change.Command = &command
	}
	before, after, err := store.SetAgent(cmd.Context(), o.Agent, o.Change)
	if errors.Is(err, fsstore.ErrInUse) {
		return failed("agent set: %v", err)
	}
	if err != nil {
		return fmt.Errorf("agent set: %w", err)
	}
	changed := []agentChangeJSON{}
	for _, key := range fsstore.AgentKeys {
		from, to := fsstore.AgentValue(before, key), fsstore.AgentValue(after, key)
		if !reflect.DeepEqual(from, to) {
			changed = append(changed, agentChangeJSON{key, jsonValue(from), jsonValue(to)})
		}
	}
	if o.JSON {
		info := status.AgentEntry{ID: after.ID, Type: after.Type, Role: after.Role, Parent: after.Parent, Name: after.Name}
		if path, err := store.PasskeyPath(after.ID); err == nil {
			_, serr := os.Stat(path)
			info.Passkey = serr == nil
		}
		return writeJSON(o.e.stdout, struct {
			ID      string            `json:"id"`
			Changed []agentChangeJSON `json:"changed"`
			Agent   status.AgentEntry `json:"agent"`
		}{after.ID, changed, info})
	}
	w := o.e.stdout
	if len(changed) == 0 {
		_, err := fmt.Fprintf(w, "%s: nothing changed\n", after.ID)
		return err
	}
	for _, c := range changed {
		fmt.Fprintf(w, "%s: %s %s -> %s\n", after.ID, c.Key, agentValueText(c.From), agentValueText(c.To))
	}
	if before.Type == fsstore.AgentHuman && after.Type == fsstore.AgentAI {
		fmt.Fprintf(w, "%s has no passkey yet: run aipm agent passkey %s\n", after.ID, after.ID)
	}
	if starts, may := launch.Starts(after); o.Client != nil && may != "" {
		fmt.Fprintf(w, "aipm watch starts %s as %s when it has work; it may %s\n", starts, after.ID, may)
		if _, err := store.Startable(after); err != nil {
			fmt.Fprintf(w, "%s has no saved passkey yet: run aipm agent passkey %s --save\n", after.ID, after.ID)
		}
	}
	launch.WarnMissing(o.e.stderr, o.e.getenv("PATH"), after)
	launch.WarnRoot(o.e.stderr, o.e.host(), after)
	return nil
}

// jsonValue is a value of an agent entry for JSON: a missing command is [].
func jsonValue(v any) any {
	if c, ok := v.([]string); ok && c == nil {
		return []string{}
	}
	return v
}

// agentValueText shows a value of an agent entry: a command as its words,
// quoted when it holds a space, "(none)" when empty.
func agentValueText(v any) string {
	s, _ := v.(string)
	if c, ok := v.([]string); ok {
		s = strings.Join(c, " ")
	}
	switch {
	case s == "":
		return "(none)"
	case strings.ContainsAny(s, " \t\"") || visible(s) != s:
		return fmt.Sprintf("%q", s)
	}
	return s
}
