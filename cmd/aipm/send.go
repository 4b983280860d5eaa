package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"aipm/fsstore"
)

// Humans chat through send, inbox and log (DESIGN section 7); AI agents use
// the MCP tools. send writes the dual copy, inbox reads and advances the
// human's cursor, log shows an agent's chat.jsonl without touching it.

type sendOptions struct {
	e    *env
	As   string
	To   string
	Text string
	JSON bool
}

func newCmdSend(e *env, runF func(*sendOptions) error) *cobra.Command {
	o := &sendOptions{e: e}
	c := &cobra.Command{
		Use:   "send --to AGENT TEXT|-",
		Short: "Send a human's message to an agent",
		Long: `Send a chat message from a human (--as, $AIPM_AS, or the project's only human)
to an agent of the project. "-" reads the text from stdin (without its
trailing line breaks). At most 4,000 characters. The message is written to
both chat logs, the receiver's first; an AI agent's waiting session wakes at once.`,
		Example: `  aipm send --to coder "please review PR 12"
  aipm send --as ops --to lead "standup in 5"
  git log -1 | aipm send --to coder -`,
		Args: argsExactly(1, "the text as one argument (quote it, or - to read stdin)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.To == "" {
				return usageError("send needs --to AGENT: who the message is for")
			}
			text, err := messageText(o.e, args[0])
			if err != nil {
				return err
			}
			o.Text = text
			if runF != nil {
				return runF(o)
			}
			return sendRun(cmd, o)
		},
	}
	c.Flags().StringVar(&o.As, "as", "", "the human sending (default $AIPM_AS, else the only human)")
	c.Flags().StringVar(&o.To, "to", "", "the agent receiving (required)")
	c.Flags().BoolVar(&o.JSON, "json", false, "print the message as JSON")
	c.RegisterFlagCompletionFunc("to", e.completeAgents(-1, ""))
	c.RegisterFlagCompletionFunc("as", e.completeAgents(-1, fsstore.AgentHuman))
	return c
}

func sendRun(cmd *cobra.Command, o *sendOptions) error {
	store, cfg, err := o.e.open()
	if err != nil {
		return err
	}
	from, err := o.e.human(cfg, o.As, "aipm send is for humans")
	if err != nil {
		return err
	}
	if err := agentRef(cfg, o.To, "--to"); err != nil {
		return err
	}
	msg, err := store.Send(cmd.Context(), cfg, fsstore.OutgoingMessage{From: from, To: o.To, Content: o.Text})
	if err != nil {
		return fmt.Errorf("send to %s: %w", o.To, err)
	}
	rs := store.ReceiverStateOf(cfg, o.To, time.Now())
	if o.JSON {
		return writeJSON(o.e.stdout, sentMessage{Message: msg, ReceiverState: rs.State, ReceiverNote: rs.Note})
	}
	_, err = fmt.Fprintf(o.e.stdout, "sent %s to %s\n%s: %s\n", msg.ID, o.To, rs.State, rs.Note)
	return err
}

// sentMessage is what aipm send --json prints: the message, and what will
// happen to it (fsstore.ReceiverStateOf), as send_message answers.
type sentMessage struct {
	fsstore.Message
	ReceiverState string `json:"receiverState"`
	ReceiverNote  string `json:"receiverNote"`
}

// messageText is the text argument, or stdin for "-" without its trailing
// line breaks.
func messageText(e *env, arg string) (string, error) {
	if arg != "-" {
		return arg, nil
	}
	if e.stdin == nil {
		return "", nil
	}
	data, err := io.ReadAll(e.stdin)
	if err != nil {
		return "", fmt.Errorf("send: read stdin: %w", err)
	}
	return strings.TrimRight(string(data), "\r\n"), nil
}
