package transcript

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"aipm/fsstore"
	"aipm/wake"
)

// ChatLog prints one agent's chat.jsonl as a transcript.
type ChatLog struct {
	P      *Printer
	Store  *fsstore.Store
	Agent  string
	JSON   bool
	Stream bool // JSON lines rather than one array
}

// Show prints the log (its last messages only, if last > 0) and, if
// follow, every message appended later until ctx ends. The subscription
// comes before the first read, so nothing written in between is missed;
// the cursor finds its place again when an editor replaces the file.
func (l *ChatLog) Show(ctx context.Context, last int, follow bool) error {
	var sub *wake.Subscription
	if follow {
		path, _ := l.Store.ChatPath(l.Agent)
		var err error
		if sub, err = wake.New().Subscribe(path); err != nil {
			return fmt.Errorf("log --follow %s: %w", l.Agent, err)
		}
		defer sub.Close()
	}
	msgs, cur, bad, err := l.Store.Follow(l.Agent, fsstore.Cursor{})
	if err != nil {
		return fmt.Errorf("log %s: %w", l.Agent, err)
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
		msgs, cur, bad, err = l.Store.Follow(l.Agent, cur)
		if err != nil {
			return fmt.Errorf("log --follow %s: %w", l.Agent, err)
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
	fsstore.Seen
	// SeenBy is, for a group message the agent sent, what each receiver
	// saw of it.
	SeenBy map[string]fsstore.Seen `json:"seenBy,omitempty"`
}

// print writes messages to stdout and invalid lines to stderr as warnings.
func (l *ChatLog) print(msgs []fsstore.Message, bad []*fsstore.LineError) error {
	for _, le := range bad {
		l.P.Skipped(le)
	}
	receipts := l.receiptsOf()
	logged := make([]loggedMessage, len(msgs))
	for i, m := range msgs {
		logged[i].Message = m
		// The receiver's receipts say when it saw the message: the agent's
		// own for what it received, each receiver's for what it sent.
		switch {
		case m.ReceivedBy(l.Agent):
			logged[i].Seen = receipts(l.Agent)[m.ID]
		case m.ReceiverID != "":
			logged[i].Seen = receipts(m.ReceiverID)[m.ID]
		case len(m.ReceiverIDs) > 0:
			logged[i].SeenBy = map[string]fsstore.Seen{}
			for _, r := range m.ReceiverIDs {
				if r != l.Agent {
					logged[i].SeenBy[r] = receipts(r)[m.ID]
				}
			}
		}
	}
	switch {
	case l.JSON && !l.Stream:
		return WriteJSON(l.P.Stdout, logged)
	case l.JSON:
		for _, m := range logged {
			if err := WriteJSONLine(l.P.Stdout, m); err != nil {
				return err
			}
		}
		return nil
	}
	for _, m := range logged {
		l.P.Message(m.Message, m.SenderID+" → "+m.Audience(l.Agent))
		l.P.writeSeen("", m.Seen)
		for _, r := range slices.Sorted(maps.Keys(m.SeenBy)) {
			l.P.writeSeen(r+": ", m.SeenBy[r])
		}
	}
	return nil
}

// receiptsOf reads each agent's receipts once, when first asked: what
// the agents of the printed messages saw of them. An unreadable file is
// warned of once and leaves its times out.
func (l *ChatLog) receiptsOf() func(agent string) map[string]fsstore.Seen {
	read := map[string]map[string]fsstore.Seen{}
	return func(agent string) map[string]fsstore.Seen {
		if seen, ok := read[agent]; ok {
			return seen
		}
		seen, err := l.Store.Receipts(agent)
		if err != nil {
			fmt.Fprintf(l.P.Stderr, "aipm: warning: receipts of %s unreadable, surfaced and read times left out: %v\n", agent, err)
		}
		read[agent] = seen
		return seen
	}
}
