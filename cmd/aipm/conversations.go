package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"aipm/fsstore"
	"aipm/internal/status"
	"aipm/internal/table"
)

type conversationsOptions struct {
	e     *env
	All   bool
	JSON  bool
	Quiet bool
}

func newCmdConversations(e *env, runF func(context.Context, *conversationsOptions) error) *cobra.Command {
	o := &conversationsOptions{e: e}
	c := &cobra.Command{
		Use:   "conversations [--all]",
		Short: "List open conversations between AI agents",
		Long: `List the conversations that are not closed yet (pending, active, or ended
but not yet told to both parties), oldest first; --all lists every
conversation. A conversation past its timeout is moved on as it is read.
The table shows ids by their shortest unique start; --json prints the whole
documents, --quiet the whole ids, one a line.`,
		Example: "  aipm conversations\n  aipm conversations --all --json\n  aipm conversations -q",
		Args:    argsNone,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := quietJSON("conversations", o.Quiet, o.JSON); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return conversationsRun(cmd.Context(), o)
		},
	}
	c.Flags().BoolVar(&o.All, "all", false, "list closed conversations too")
	c.Flags().BoolVar(&o.JSON, "json", false, "print the conversations as a JSON array")
	c.Flags().BoolVarP(&o.Quiet, "quiet", "q", false, "print only the whole conversation ids, one a line")
	return c
}

func conversationsRun(ctx context.Context, o *conversationsOptions) error {
	store, cfg, err := o.e.open()
	if err != nil {
		return err
	}
	cs, err := store.Conversations().List(ctx, cfg, o.All)
	if err != nil {
		return fmt.Errorf("conversations: %w", err)
	}
	switch {
	case o.JSON:
		return writeJSON(o.e.stdout, cs)
	case o.Quiet:
		return printIDs(o.e.stdout, cs, func(x fsstore.Conversation) string { return x.ID })
	case len(cs) == 0 && o.All:
		_, err := fmt.Fprintln(o.e.stdout, "no conversations")
		return err
	case len(cs) == 0:
		_, err := fmt.Fprintln(o.e.stdout, "no open conversations (aipm conversations --all lists closed ones)")
		return err
	}
	short, err := table.Shortener(store.IDs, fsstore.Conversations, fsstore.Tasks)
	if err != nil {
		return fmt.Errorf("conversations: %w", err)
	}
	return status.ConversationTable(cs, short).Print(o.e.stdout, o.e.colour, o.e.width)
}

type conversationShowOptions struct {
	e    *env
	ID   string
	JSON bool
}

func newCmdConversation(e *env) *cobra.Command {
	return newNoun("conversation", "Show one conversation",
		"Show one conversation between two AI agents: its fields, history and messages.",
		"  aipm conversation show 01KAQ7",
		newCmdConversationShow(e, nil))
}

func newCmdConversationShow(e *env, runF func(context.Context, *conversationShowOptions) error) *cobra.Command {
	o := &conversationShowOptions{e: e}
	c := &cobra.Command{
		Use:   "show ID",
		Short: "Show a conversation: fields, history and messages",
		Long: `Show a conversation: its parties, state, turns, task, the history of its
states, and its messages (from the initiator's chat log). The id may be any
unique start of it, with or without cnv_. --json prints
{"conversation": document, "messages": [...]}.`,
		Example: "  aipm conversation show 01KAQ7\n  aipm conversation show cnv_01KAQ7ZB3C --json",
		Args:    argsExactly(1, "exactly one conversation id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ID = args[0]
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return conversationShowRun(cmd.Context(), o)
		},
	}
	c.Flags().BoolVar(&o.JSON, "json", false, "print the conversation and its messages as JSON")
	return c
}

type conversationJSON struct {
	Conversation fsstore.Conversation `json:"conversation"`
	Messages     []fsstore.Message    `json:"messages"`
}

func conversationShowRun(ctx context.Context, o *conversationShowOptions) error {
	store, cfg, err := o.e.open()
	if err != nil {
		return err
	}
	id, err := store.ResolveID(fsstore.Conversations, o.ID)
	if err != nil {
		return asUsage(err)
	}
	c, msgs, err := store.Conversations().Log(ctx, cfg, id)
	if err != nil {
		return fmt.Errorf("conversation show: %w", err)
	}
	if o.JSON {
		return writeJSON(o.e.stdout, conversationJSON{Conversation: c, Messages: msgs})
	}
	e := o.e
	if err := status.PrintConversation(e.stdout, c, e.timeText); err != nil {
		return err
	}
	if len(msgs) == 0 {
		_, err := fmt.Fprintln(e.stdout, "no messages")
		return err
	}
	fmt.Fprintln(e.stdout, "messages:")
	for _, m := range msgs {
		e.printer().Message(m, m.SenderID+" → "+m.Audience(c.Initiator))
	}
	return nil
}

type delegationsOptions struct {
	e     *env
	All   bool
	JSON  bool
	Quiet bool
}

func newCmdDelegations(e *env, runF func(*delegationsOptions) error) *cobra.Command {
	o := &delegationsOptions{e: e}
	c := &cobra.Command{
		Use:   "delegations [--all]",
		Short: "List open delegations from task sessions to chat sessions",
		Long: `List the delegations still open (pending or processing), oldest first: a
task session asked its agent's chat session to talk to someone. --all lists
completed and failed ones too, with their results. The table shows ids by
their shortest unique start; --json prints the whole documents, --quiet the
whole ids, one a line.`,
		Example: "  aipm delegations\n  aipm delegations --all --json\n  aipm delegations -q",
		Args:    argsNone,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := quietJSON("delegations", o.Quiet, o.JSON); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return delegationsRun(o)
		},
	}
	c.Flags().BoolVar(&o.All, "all", false, "list completed and failed delegations too")
	c.Flags().BoolVar(&o.JSON, "json", false, "print the delegations as a JSON array")
	c.Flags().BoolVarP(&o.Quiet, "quiet", "q", false, "print only the whole delegation ids, one a line")
	return c
}

func delegationsRun(o *delegationsOptions) error {
	store, _, err := o.e.open()
	if err != nil {
		return err
	}
	ds, err := store.Delegations().List(fsstore.DelegationFilter{Open: !o.All})
	if err != nil {
		return fmt.Errorf("delegations: %w", err)
	}
	switch {
	case o.JSON:
		return writeJSON(o.e.stdout, ds)
	case o.Quiet:
		return printIDs(o.e.stdout, ds, func(x fsstore.Delegation) string { return x.ID })
	case len(ds) == 0 && o.All:
		_, err := fmt.Fprintln(o.e.stdout, "no delegations")
		return err
	case len(ds) == 0:
		_, err := fmt.Fprintln(o.e.stdout, "no open delegations (aipm delegations --all lists closed ones)")
		return err
	}
	short, err := table.Shortener(store.IDs, fsstore.Delegations, fsstore.Tasks)
	if err != nil {
		return fmt.Errorf("delegations: %w", err)
	}
	return status.DelegationTable(ds, o.All, short).Print(o.e.stdout, o.e.colour, o.e.width)
}
