package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"aipm/fsstore"
)

func runAgent(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		return usageError("agent needs a subcommand: agent add ID --type ai|human, or agent list")
	}
	switch args[0] {
	case "add":
		return runAgentAdd(ctx, e, args[1:])
	case "list":
		return runAgentList(ctx, e, args[1:])
	}
	return usageError("unknown agent subcommand %q: use agent add or agent list", args[0])
}

func runAgentAdd(ctx context.Context, e *env, args []string) error {
	fs := e.flags("agent add")
	var a fsstore.NewAgent
	fs.StringVar(&a.Type, "type", "", "ai or human (required)")
	fs.StringVar(&a.Name, "name", "", "display name")
	fs.StringVar(&a.Role, "role", "", "worker (default) or manager")
	fs.StringVar(&a.Parent, "parent", "", "id of the agent this one answers to")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("agent add needs exactly one agent id: aipm agent add ID --type ai|human")
	}
	a.ID = pos[0]
	if err := fsstore.CheckAgentID(a.ID); err != nil {
		return usageError("%v", err)
	}
	if a.Type != fsstore.AgentAI && a.Type != fsstore.AgentHuman {
		return usageError("agent add needs --type ai or --type human, got %q", a.Type)
	}
	store, _, err := e.open()
	if err != nil {
		return err
	}
	passkey, err := store.AddAgent(ctx, a)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "added %s agent %s\n", a.Type, a.ID)
	fmt.Fprintf(e.stdout, "passkey: %s\n", passkey)
	fmt.Fprintln(e.stdout, "(shown once; aipm stores only its hash)")
	return nil
}

func runAgentList(ctx context.Context, e *env, args []string) error {
	fs := e.flags("agent list")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError("agent list takes no arguments, got %q", pos[0])
	}
	_, cfg, err := e.open()
	if err != nil {
		return err
	}
	if len(cfg.Agents) == 0 {
		fmt.Fprintln(e.stdout, "no agents: add one with aipm agent add ID --type ai|human")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTYPE\tROLE\tPARENT\tNAME")
	for _, a := range cfg.Agents {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", a.ID, a.Type, a.Role, dash(a.Parent), dash(a.Name))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
