package main

import (
	"github.com/spf13/cobra"

	"aipm/internal/clients"
	"aipm/internal/launch"
)

// clientFlags are agent add's and agent set's flags for an agent that is
// a real client: they become its command, "aipm launch CLIENT ..." (internal/launch).
type clientFlags struct {
	client, model, access string
	args                  []string
}

func (f *clientFlags) register(c *cobra.Command) {
	fs := c.Flags()
	fs.StringVar(&f.client, "client", "", clients.Known("")+": aipm watch starts that client headless as this agent (aipm launch); implies --save-passkey")
	fs.StringVar(&f.model, "model", "", "with --client: the client's model")
	fs.StringVar(&f.access, "access", "", "with --client: what the agent may do: read, project (the default: edit files and run commands inside the project) or full")
	fs.StringArrayVar(&f.args, "client-arg", nil, "with --client: one more argument for the client (repeat for several)")
	c.RegisterFlagCompletionFunc("client", cobra.FixedCompletions(clients.Names(), cobra.ShellCompDirectiveNoFileComp))
	c.RegisterFlagCompletionFunc("access", cobra.FixedCompletions(launch.AccessLevels, cobra.ShellCompDirectiveNoFileComp))
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
func (f *clientFlags) spec(c *cobra.Command, base launch.Spec) (launch.Spec, error) {
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
		spec.Access = launch.AccessProject
	}
	if fl.Changed("client-arg") {
		spec.Extra = f.args
	}
	if err := spec.Check(); err != nil {
		return spec, asUsage(err)
	}
	return spec, nil
}
