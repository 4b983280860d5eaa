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
	e     *env
	As    string
	To    string // one agent, or several separated by commas
	Group string // a [groups] name of config.toml
	Text  string
	JSON  bool
}

func newCmdSend(e *env, runF func(*sendOptions) error) *cobra.Command {
	o := &sendOptions{e: e}
	c := &cobra.Command{
		Use:   "send --to AGENT TEXT|-",
		Short: "Send a human's message to an agent, several, or a group",
		Long: `Send a chat message from a human (--as, $AIPM_AS, or the project's only human)
to an agent of the project. "-" reads the text from stdin (without its
trailing line breaks). At most 4,000 characters. The message is written to
both chat logs, the receiver's first; an AI agent's waiting session wakes at once.

--to a,b (two or more agents) or --group NAME (a group of config.toml's
[groups], without you) sends one group message: one line in your chat log,
then one in each receiver's, all naming every receiver.`,
		Example: `  aipm send --to coder "please review PR 12"
  aipm send --as ops --to lead "standup in 5"
  aipm send --to coder,reviewer "release at 3"
  aipm send --group reviewers "PR 12 is ready"
  git log -1 | aipm send --to coder -`,
		Args: argsExactly(1, "the text as one argument (quote it, or - to read stdin)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case o.To == "" && o.Group == "":
				return usageError("send needs --to AGENT (or --to a,b, or --group NAME): who the message is for")
			case o.To != "" && o.Group != "":
				return usageError("send takes --to or --group, not both")
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
	c.Flags().StringVar(&o.To, "to", "", "the agent receiving, or several separated by commas")
	c.Flags().StringVar(&o.Group, "group", "", "a group of config.toml's [groups] receiving")
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
	m := fsstore.OutgoingMessage{From: from, Group: o.Group, Content: o.Text}
	if to := strings.Split(o.To, ","); len(to) > 1 {
		for _, id := range to {
			m.Receivers = append(m.Receivers, strings.TrimSpace(id))
		}
	} else {
		m.To = o.To
	}
	for _, id := range append(m.Receivers, m.To) {
		if err := agentRef(cfg, id, "--to"); err != nil {
			return err
		}
	}
	msg, err := store.Send(cmd.Context(), cfg, m)
	if err != nil {
		return fmt.Errorf("send to %s: %w", o.To+o.Group, err)
	}
	receivers := msg.ReceiverIDs
	if receivers == nil {
		receivers = []string{o.To}
	}
	out := sentMessage{Message: msg}
	for _, r := range receivers {
		out.Receivers = append(out.Receivers, store.ReceiverStateOf(cfg, r, time.Now()))
	}
	if len(out.Receivers) == 1 {
		out.ReceiverState, out.ReceiverNote, out.Receivers = out.Receivers[0].State, out.Receivers[0].Note, nil
	}
	if o.JSON {
		return writeJSON(o.e.stdout, out)
	}
	text := fmt.Sprintf("sent %s to %s\n", msg.ID, msg.Audience(o.To))
	if out.ReceiverState != "" {
		text += out.ReceiverState + ": " + out.ReceiverNote + "\n"
	}
	for _, r := range out.Receivers {
		text += r.State + ": " + r.Note + "\n"
	}
	_, err = io.WriteString(o.e.stdout, text)
	return err
}

// sentMessage is what aipm send --json prints: the message, and what will
// happen to it (fsstore.ReceiverStateOf), as send_message answers.
type sentMessage struct {
	fsstore.Message
	ReceiverState string `json:"receiverState,omitempty"`
	ReceiverNote  string `json:"receiverNote,omitempty"`
	// Receivers, for a message to several, says it for each.
	Receivers []fsstore.ReceiverState `json:"receivers,omitempty"`
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
