package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"aipm/fsstore"
	"aipm/fsstore/storage"
	"aipm/wake"
)

// followRecheck is how long log --follow waits for a change before it
// re-reads anyway: a safety net for an event fsnotify lost.
const followRecheck = 3 * time.Second

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
warnings on stderr; a torn last line (a write in progress) is not shown.

--json prints a JSON array of the messages; with --follow it prints one
compact JSON message per line instead (a stream never closes an array).`,
		Example: "  aipm log coder\n  aipm log coder --follow --last 10\n  aipm log coder --json",
		Args:    argsExactly(1, "exactly one agent id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Agent = args[0]
			if o.Last < 0 {
				return usageError("log --last must not be negative, got %d", o.Last)
			}
			if err := storage.CheckAgentID(o.Agent); err != nil {
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
	if dir, _ := store.AgentDir(o.Agent); !isDir(dir) {
		return usageError("agent %q is not an agent of this project: see aipm agent list", o.Agent)
	}
	l := &chatLog{e: o.e, store: store, agent: o.Agent, json: o.JSON, stream: o.Follow}
	return l.show(ctx, o.Last, o.Follow)
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// chatLog prints one agent's chat.jsonl as a transcript.
type chatLog struct {
	e      *env
	store  *fsstore.Store
	agent  string
	json   bool
	stream bool // JSON lines rather than one array
}

// show prints the log (its last messages only, if last > 0) and, if
// follow, every message appended later until ctx ends. The subscription
// comes before the first read, so nothing written in between is missed;
// the cursor finds its place again when an editor replaces the file.
func (l *chatLog) show(ctx context.Context, last int, follow bool) error {
	var sub *wake.Subscription
	if follow {
		path, _ := l.store.ChatPath(l.agent)
		var err error
		if sub, err = wake.New().Subscribe(path); err != nil {
			return fmt.Errorf("log --follow %s: %w", l.agent, err)
		}
		defer sub.Close()
	}
	msgs, cur, bad, err := l.store.Follow(l.agent, storage.Cursor{})
	if err != nil {
		return fmt.Errorf("log %s: %w", l.agent, err)
	}
	if last > 0 && len(msgs) > last {
		msgs = msgs[len(msgs)-last:]
	}
	if err := l.print(msgs, bad); err != nil || !follow {
		return err
	}
	for {
		if _, err := sub.Wait(ctx, followRecheck); err != nil {
			return nil // interrupted: how --follow ends (mainExit exits 130)
		}
		msgs, cur, bad, err = l.store.Follow(l.agent, cur)
		if err != nil {
			return fmt.Errorf("log --follow %s: %w", l.agent, err)
		}
		if err := l.print(msgs, bad); err != nil {
			return err
		}
	}
}

// loggedMessage is a message as log shows it: with, for a message the
// agent received, when it was surfaced to its sessions and when read.
type loggedMessage struct {
	fsstore.Message
	storage.Seen
	// SeenBy is, for a group message the agent sent, what each receiver
	// saw of it.
	SeenBy map[string]storage.Seen `json:"seenBy,omitempty"`
}

// print writes messages to stdout and invalid lines to stderr as warnings.
func (l *chatLog) print(msgs []fsstore.Message, bad []*storage.LineError) error {
	for _, le := range bad {
		fmt.Fprintf(l.e.stderr, "aipm: warning: skipped %v\n", le)
	}
	receipts := l.receiptsOf()
	logged := make([]loggedMessage, len(msgs))
	for i, m := range msgs {
		logged[i].Message = m
		// The receiver's receipts say when it saw the message: the agent's
		// own for what it received, each receiver's for what it sent.
		switch {
		case m.ReceivedBy(l.agent):
			logged[i].Seen = receipts(l.agent)[m.ID]
		case m.ReceiverID != "":
			logged[i].Seen = receipts(m.ReceiverID)[m.ID]
		case len(m.ReceiverIDs) > 0:
			logged[i].SeenBy = map[string]storage.Seen{}
			for _, r := range m.ReceiverIDs {
				if r != l.agent {
					logged[i].SeenBy[r] = receipts(r)[m.ID]
				}
			}
		}
	}
	switch {
	case l.json && !l.stream:
		return writeJSON(l.e.stdout, logged)
	case l.json:
		for _, m := range logged {
			if err := writeJSONLine(l.e.stdout, m); err != nil {
				return err
			}
		}
		return nil
	}
	for _, m := range logged {
		l.e.writeMessage(m.Message, m.SenderID+" → "+m.Audience(l.agent))
		l.e.writeSeen("", m.Seen)
		for _, r := range slices.Sorted(maps.Keys(m.SeenBy)) {
			l.e.writeSeen(r+": ", m.SeenBy[r])
		}
	}
	return nil
}

// receiptsOf reads each agent's receipts once, when first asked: what
// the agents of the printed messages saw of them. An unreadable file is
// warned of once and leaves its times out.
func (l *chatLog) receiptsOf() func(agent string) map[string]storage.Seen {
	read := map[string]map[string]storage.Seen{}
	return func(agent string) map[string]storage.Seen {
		if seen, ok := read[agent]; ok {
			return seen
		}
		seen, err := l.store.Receipts(agent)
		if err != nil {
			fmt.Fprintf(l.e.stderr, "aipm: warning: receipts of %s unreadable, surfaced and read times left out: %v\n", agent, err)
		}
		read[agent] = seen
		return seen
	}
}

// writeSeen prints, under a received message, when it was surfaced to
// the agent's sessions (and how) and when read; nothing before either.
func (e *env) writeSeen(who string, s storage.Seen) {
	var parts []string
	if !s.SurfacedAt.IsZero() {
		parts = append(parts, fmt.Sprintf("surfaced %s (%s)", e.timeText(s.SurfacedAt), visible(s.SurfacedVia)))
	}
	if !s.ReadAt.IsZero() {
		parts = append(parts, fmt.Sprintf("read %s (%s)", e.timeText(s.ReadAt), visible(s.ReadVia)))
	}
	if len(parts) > 0 {
		fmt.Fprintf(e.stdout, "    ↳ %s%s\n", who, strings.Join(parts, ", "))
	}
}

// writeMessage prints "TIME  WHO: TEXT", continuation lines of the text
// indented under WHO, "[system] " before WHO for what aipm wrote. Control
// characters are shown escaped, so a message cannot drive the terminal.
func (e *env) writeMessage(m fsstore.Message, who string) {
	stamp := m.CreatedAt
	if t, err := time.Parse(time.RFC3339Nano, m.CreatedAt); err == nil {
		stamp = e.timeText(t)
	}
	if m.Kind == fsstore.KindSystem || m.SenderID == storage.SystemSender {
		who = "[system] " + who
	}
	if m.ConversationID != "" {
		who += " [" + m.ConversationID + "]"
	}
	indent := "\n" + strings.Repeat(" ", len(stamp)+2)
	text := strings.ReplaceAll(visible(strings.TrimRight(m.Content, "\n")), "\n", indent)
	fmt.Fprintf(e.stdout, "%s  %s: %s\n", visible(stamp), visible(who), text)
}
