package main

import (
	"context"

	"github.com/spf13/cobra"

	"aipm/fsstore"
	"aipm/internal/transcript"
)

type logOptions struct {
	e      *env
	Agent  string
	Follow bool
	Last   int
	JSON   bool
}

func newCmdLog(e *env, runF func(*logOptions) error) *cobra.Command {
	o := &logOptions{e: e}
	c := &cobra.Command{
		Use:   "log AGENT [--follow] [--last N]",
		Short: "Show an agent's chat transcript (--follow like tail -f)",
		Long: `Show an agent's chat log (.ai-pm/agents/AGENT/chat.jsonl) as a transcript:
TIME  sender → receiver: text. Nothing is marked read. --follow keeps printing
new messages, woken by fsnotify, until Ctrl-C (exit 130). Invalid lines are
warnings on stderr; a torn last line (a write in progress, or a writer that
died) is not shown, and is said in one warning.

--json prints a JSON array of the messages; with --follow it prints one
compact JSON message per line instead (a stream never closes an array).`,
		Example: "  aipm log coder\n  aipm log coder --follow --last 10\n  aipm log coder --json",
		Args:    argsExactly(1, "exactly one agent id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Agent = args[0]
			if o.Last < 0 {
				return usageError("log --last must not be negative, got %d", o.Last)
			}
			if err := fsstore.CheckAgentID(o.Agent); err != nil {
				return asUsage(err)
			}
			if runF != nil {
				return runF(o)
			}
			return logRun(cmd.Context(), o)
		},
	}
	c.ValidArgsFunction = e.completeAgents(0, "")
	c.Flags().BoolVarP(&o.Follow, "follow", "f", false, "keep printing new messages until interrupted")
	c.Flags().IntVar(&o.Last, "last", 0, "show only the last N messages (then follow)")
	c.Flags().BoolVar(&o.JSON, "json", false, "print the messages as a JSON array (JSON lines with --follow)")
	return c
}

func logRun(ctx context.Context, o *logOptions) error {
	store, err := o.e.openStore()
	if err != nil {
		return err
	}
	// An agent removed from the config keeps its history: the directory decides.
	if dir, _ := store.AgentDir(o.Agent); !transcript.IsDir(dir) {
		return usageError("agent %q is not an agent of this project: see aipm agent list", o.Agent)
	}
	l := &transcript.ChatLog{P: o.e.printer(), Store: store, Agent: o.Agent, JSON: o.JSON, Stream: o.Follow}
	return l.Show(ctx, o.Last, o.Follow)
}
