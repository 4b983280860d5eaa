package main

import (
	"context"

	"github.com/spf13/cobra"

	"aipm/fsstore"
	"aipm/internal/transcript"
)

type notificationsOptions struct {
	e      *env
	Agent  string
	Follow bool
	Last   int
	Unread bool
	JSON   bool
}

func newCmdNotifications(e *env, runF func(*notificationsOptions) error) *cobra.Command {
	o := &notificationsOptions{e: e}
	c := &cobra.Command{
		Use:   "notifications [AGENT] [--unread] [--follow] [--last N]",
		Short: "Show agents' notifications (interrupts and infos) without marking them read",
		Long: `Show the notifications addressed to AGENT (.ai-pm/agents/AGENT/notifications.jsonl),
or to every agent of the project, oldest first:
TIME  AGENT  TYPE  STATE  from WHO  TASK: MESSAGE.
TYPE is interrupt or info. STATE is unread while no session that may see it
has received it (the NOTIFICATIONS count of aipm status; one about a task only
counts as read once the agent's task session got it), expired once it outlived
its type's time to live ([notifications.ttl] in config.toml: no session will
get it), else read.

Looking is a peek: nothing is marked read, so the agents' sessions still get
every notification. --unread shows only the unread ones; --follow keeps
printing new notifications, woken by fsnotify, until Ctrl-C (exit 130).

--json prints a JSON array of the notifications, each with its agent and
read; with --follow it prints one compact JSON object per line instead.`,
		Example: "  aipm notifications\n  aipm notifications coder --unread\n  aipm notifications coder --follow --last 5\n  aipm notifications --json",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError("%s takes at most one agent id, got %s: %s", cmd.CommandPath(), plural(len(args), "argument"), cmd.UseLine())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Agent = args[0]
				if err := fsstore.CheckAgentID(o.Agent); err != nil {
					return asUsage(err)
				}
			}
			if o.Last < 0 {
				return usageError("notifications --last must not be negative, got %d", o.Last)
			}
			if runF != nil {
				return runF(o)
			}
			return notificationsRun(cmd.Context(), o)
		},
	}
	c.ValidArgsFunction = e.completeAgents(0, "")
	c.Flags().BoolVarP(&o.Follow, "follow", "f", false, "keep printing new notifications until interrupted")
	c.Flags().IntVar(&o.Last, "last", 0, "show only the last N notifications (then follow)")
	c.Flags().BoolVar(&o.Unread, "unread", false, "show only the notifications no session has read yet")
	c.Flags().BoolVar(&o.JSON, "json", false, "print the notifications as a JSON array (JSON lines with --follow)")
	return c
}

func notificationsRun(ctx context.Context, o *notificationsOptions) error {
	store, cfg, err := o.e.open()
	if err != nil {
		return err
	}
	var agents []string
	if o.Agent != "" {
		// An agent removed from the config keeps its history: the directory decides.
		if dir, _ := store.AgentDir(o.Agent); !transcript.IsDir(dir) {
			return usageError("agent %q is not an agent of this project: see aipm agent list", o.Agent)
		}
		agents = []string{o.Agent}
	} else {
		for _, a := range cfg.Agents {
			agents = append(agents, a.ID)
		}
	}
	f := &transcript.Notifications{P: o.e.printer(), Store: store, Agents: agents, JSON: o.JSON, Stream: o.Follow, Unread: o.Unread}
	return f.Show(ctx, o.Last, o.Follow)
}
