package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"aipm/fsstore"
)

// inboxLimit is how many messages inbox shows when --limit is not given.
const inboxLimit = 20

type inboxOptions struct {
	e     *env
	As    string
	Peek  bool
	Limit int
	JSON  bool
}

func newCmdInbox(e *env, runF func(*inboxOptions) error) *cobra.Command {
	o := &inboxOptions{e: e}
	c := &cobra.Command{
		Use:   "inbox [--peek] [--limit N]",
		Short: "Show a human's unread messages and mark them read",
		Long: `Show the unread messages others sent to a human (--as, $AIPM_AS, or the
project's only human), oldest first, and mark them read; --peek leaves them
unread. At most --limit are shown; the rest are counted.`,
		Example: "  aipm inbox\n  aipm inbox --as lead --peek\n  aipm inbox --json",
		Args:    argsNone,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Limit < 1 {
				return usageError("inbox --limit must be at least 1, got %d", o.Limit)
			}
			if runF != nil {
				return runF(o)
			}
			return inboxRun(cmd.Context(), o)
		},
	}
	c.Flags().StringVar(&o.As, "as", "", "the human whose inbox to read (default $AIPM_AS, else the only human)")
	c.Flags().BoolVar(&o.Peek, "peek", false, "show the messages without marking them read")
	c.Flags().IntVar(&o.Limit, "limit", inboxLimit, "the most messages to show")
	c.Flags().BoolVar(&o.JSON, "json", false, "print the messages as a JSON array (the count of the rest goes to stderr)")
	return c
}

func inboxRun(ctx context.Context, o *inboxOptions) error {
	e := o.e
	store, cfg, err := e.open()
	if err != nil {
		return err
	}
	as, err := e.human(cfg, o.As, "an AI agent reads its messages through its MCP session")
	if err != nil {
		return err
	}
	msgs, more, err := store.Unread(ctx, as, o.Limit, o.Peek)
	if err != nil {
		return fmt.Errorf("inbox of %s: %w", as, err)
	}
	if o.JSON {
		if msgs == nil {
			msgs = []fsstore.Message{}
		}
		if err := writeJSON(e.stdout, msgs); err != nil {
			return err
		}
	} else {
		if len(msgs) == 0 {
			fmt.Fprintln(e.stdout, "no unread messages")
		}
		for _, m := range msgs {
			e.printer().Message(m, m.SenderID)
		}
	}
	if !more {
		return nil
	}
	// How many are left (on stderr with --json, so that stdout stays JSON).
	rest, _, err := store.Unread(ctx, as, 0, true)
	if err != nil {
		return fmt.Errorf("inbox of %s: count the rest: %w", as, err)
	}
	n, next := len(rest), "run aipm inbox --as "+as+" again"
	if o.Peek {
		n -= len(msgs)
		next = fmt.Sprintf("nothing was marked read (run aipm inbox --as %s to read them)", as)
	}
	w := e.stdout
	if o.JSON {
		w = e.stderr
	}
	_, err = fmt.Fprintf(w, "%d more unread: %s\n", max(n, 1), next)
	return err
}
