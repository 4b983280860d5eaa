package main

import (
	"aipm/fsstore/storage"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// clientFlags are agent add's and agent set's flags for an agent that is
// a real client: they become its command, "aipm launch CLIENT ..." (launch.go).
type clientFlags struct {
	client, model, access string
	args                  []string
}

func (f *clientFlags) register(c *cobra.Command) {
	fs := c.Flags()
	fs.StringVar(&f.client, "client", "", "claude or codex: aipm watch starts that client headless as this agent (aipm launch); implies --save-passkey")
	fs.StringVar(&f.model, "model", "", "with --client: the client's model")
	fs.StringVar(&f.access, "access", "", "with --client: what the agent may do: read, project (the default: edit files and run commands inside the project) or full")
	fs.StringArrayVar(&f.args, "client-arg", nil, "with --client: one more argument for the client (repeat for several)")
	c.RegisterFlagCompletionFunc("client", cobra.FixedCompletions([]string{"claude", "codex"}, cobra.ShellCompDirectiveNoFileComp))
	c.RegisterFlagCompletionFunc("access", cobra.FixedCompletions(accessLevels, cobra.ShellCompDirectiveNoFileComp))
}

// set says whether any of the flags was given.
func (f *clientFlags) set(c *cobra.Command) bool {
	for _, name := range []string{"client", "model", "access", "client-arg"} {
		if c.Flags().Changed(name) {
			return true
		}
	}
	return false
}

// spec applies the flags to base (an agent's current launch command, or
// the zero spec) and checks the result.
func (f *clientFlags) spec(c *cobra.Command, base launchSpec) (launchSpec, error) {
	spec := base
	fl := c.Flags()
	if fl.Changed("client") {
		spec.Client = f.client
	}
	if spec.Client == "" {
		return spec, usageError("--model, --access and --client-arg go with --client claude or --client codex")
	}
	if fl.Changed("model") {
		spec.Model = f.model
	}
	if fl.Changed("access") {
		spec.Access = f.access
	}
	if spec.Access == "" {
		spec.Access = accessProject
	}
	if fl.Changed("client-arg") {
		spec.Extra = f.args
	}
	if err := spec.check(); err != nil {
		return spec, asUsage(err)
	}
	return spec, nil
}

// agentStarts is what aipm watch starts for a, in a few words, and what it
// may do: "claude", "edit files and run ..." for a launched client; the
// command's first word (two for aipm's: "aipm sim") and "" otherwise; ""
// when it has no command.
func agentStarts(a storage.Agent) (starts, may string) {
	if len(a.Command) == 0 {
		return "", ""
	}
	spec, ok, err := launchSpecOf(a.Command)
	switch {
	case ok && err == nil:
		return spec.Client, spec.may()
	case ok:
		return "aipm launch (invalid)", ""
	}
	words := []string{filepath.Base(a.Command[0])}
	if words[0] == serverName && len(a.Command) > 1 {
		words = append(words, a.Command[1]) // aipm sim
	}
	return strings.Join(words, " "), ""
}

// warnClientMissing says, on w, when the client an agent's command
// launches is not on path.
func warnClientMissing(w io.Writer, path string, a storage.Agent) {
	spec, ok, err := launchSpecOf(a.Command)
	if !ok || err != nil {
		return
	}
	if msg := clientMissing(path, spec); msg != "" {
		fmt.Fprintf(w, "aipm: warning: agent %s: %s\n", a.ID, msg)
	}
}
