package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"aipm/fsstore"
	"aipm/watcher"
)

// Humans chat through these commands (DESIGN section 7); AI agents use the
// MCP tools. send writes the dual copy, inbox reads and advances the
// human's cursor, log shows an agent's chat.jsonl without touching it.

// inboxLimit is how many messages inbox shows when --limit is not given.
const inboxLimit = 20

// followRecheck is how long log --follow waits for a change before it
// re-reads anyway: a safety net for an event fsnotify lost.
const followRecheck = 3 * time.Second

func runSend(ctx context.Context, e *env, args []string) error {
	fs := e.flags("send")
	as := fs.String("as", "", "the human sending (required)")
	to := fs.String("to", "", "the agent receiving (required)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("send needs the text as one argument: aipm send --as HUMAN --to AGENT \"TEXT\" (or - to read it from stdin)")
	}
	if *as == "" || *to == "" {
		return usageError("send needs --as HUMAN and --to AGENT: aipm send --as HUMAN --to AGENT \"TEXT\"")
	}
	content, err := messageText(e, pos[0])
	if err != nil {
		return err
	}
	store, cfg, err := e.open()
	if err != nil {
		return err
	}
	if err := human(cfg, *as, "agents send with the send_message tool"); err != nil {
		return err
	}
	msg, err := store.Send(ctx, cfg, fsstore.OutgoingMessage{From: *as, To: *to, Content: content})
	if err != nil {
		return withCode(err, "send to "+*to)
	}
	fmt.Fprintf(e.stdout, "sent %s to %s\n", msg.ID, *to)
	return nil
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

// human checks that --as names a human agent of the project; tool says
// what an AI agent uses instead.
func human(cfg *fsstore.Config, as, tool string) error {
	if err := agentRef(cfg, as, "--as"); err != nil {
		return err
	}
	if a, _ := cfg.Agent(as); a.Type != fsstore.AgentHuman {
		return fmt.Errorf("--as %q is an AI agent, not a human: %s", as, tool)
	}
	return nil
}

// withCode puts a refusal's stable code in front of its message
// ("content_too_long: …"); other errors get what as context.
func withCode(err error, what string) error {
	var ce *fsstore.CodeError
	if errors.As(err, &ce) {
		return fmt.Errorf("%s: %w", ce.Code, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func runInbox(ctx context.Context, e *env, args []string) error {
	fs := e.flags("inbox")
	as := fs.String("as", "", "the human whose inbox to read (required)")
	peek := fs.Bool("peek", false, "show the messages without marking them read")
	limit := fs.Int("limit", inboxLimit, "the most messages to show")
	asJSON := fs.Bool("json", false, "print one JSON message per line")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError("inbox takes no arguments, got %q: aipm inbox --as HUMAN [--peek] [--limit N] [--json]", pos[0])
	}
	if *as == "" {
		return usageError("inbox needs --as HUMAN: whose messages to read")
	}
	if *limit < 1 {
		return usageError("inbox --limit must be at least 1, got %d", *limit)
	}
	store, cfg, err := e.open()
	if err != nil {
		return err
	}
	if err := human(cfg, *as, "agents read theirs with the get_pending_messages tool"); err != nil {
		return err
	}
	msgs, more, err := store.Unread(ctx, *as, *limit, *peek)
	if err != nil {
		return fmt.Errorf("inbox of %s: %w", *as, err)
	}
	if err := printInbox(e, msgs, *as, *asJSON); err != nil {
		return err
	}
	if more {
		return printMoreUnread(ctx, e, store, *as, len(msgs), *peek, *asJSON)
	}
	return nil
}

func printInbox(e *env, msgs []fsstore.Message, as string, asJSON bool) error {
	if asJSON {
		if err := writeJSONLines(e, msgs); err != nil {
			return fmt.Errorf("inbox of %s: %w", as, err)
		}
		return nil
	}
	if len(msgs) == 0 {
		fmt.Fprintln(e.stdout, "no unread messages")
	}
	for _, m := range msgs {
		writeMessage(e.stdout, m, m.SenderID)
	}
	return nil
}

// printMoreUnread says how many unread messages inbox left out (on stderr
// with --json, so that stdout stays JSON lines).
func printMoreUnread(ctx context.Context, e *env, store *fsstore.Store, as string, shown int, peek, asJSON bool) error {
	rest, _, err := store.Unread(ctx, as, 0, true)
	if err != nil {
		return fmt.Errorf("inbox of %s: count the rest: %w", as, err)
	}
	n, next := len(rest), fmt.Sprintf("run aipm inbox --as %s again", as)
	if peek {
		n -= shown
		next = fmt.Sprintf("nothing was marked read (run aipm inbox --as %s to read them)", as)
	}
	w := e.stdout
	if asJSON {
		w = e.stderr
	}
	fmt.Fprintf(w, "%d more unread: %s\n", max(n, 1), next)
	return nil
}

func runLog(ctx context.Context, e *env, args []string) error {
	fs := e.flags("log")
	follow := fs.Bool("follow", false, "keep printing new messages until interrupted")
	asJSON := fs.Bool("json", false, "print one JSON message per line")
	last := fs.Int("last", 0, "show only the last N messages (then follow)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("log needs exactly one agent id: aipm log AGENT [--follow] [--json] [--last N]")
	}
	if *last < 0 {
		return usageError("log --last must not be negative, got %d", *last)
	}
	agent := pos[0]
	if err := fsstore.CheckAgentID(agent); err != nil {
		return usageError("%v", err)
	}
	store, _, err := e.open()
	if err != nil {
		return err
	}
	// An agent removed from the config keeps its history: the directory decides.
	if dir, _ := store.AgentDir(agent); !isDir(dir) {
		return fmt.Errorf("agent %q is not an agent of this project: see aipm agent list", agent)
	}
	l := &chatLog{e: e, store: store, agent: agent, json: *asJSON}
	return l.show(ctx, *last, *follow)
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// chatLog prints one agent's chat.jsonl as a transcript.
type chatLog struct {
	e     *env
	store *fsstore.Store
	agent string
	json  bool
}

// show prints the log (its last messages only, if last > 0) and, if
// follow, every message appended later until ctx ends. The subscription
// comes before the first read, so nothing written in between is missed;
// the cursor finds its place again when an editor replaces the file.
func (l *chatLog) show(ctx context.Context, last int, follow bool) error {
	var sub *watcher.Subscription
	if follow {
		path, _ := l.store.ChatPath(l.agent)
		var err error
		if sub, err = watcher.NewWake().Subscribe(path); err != nil {
			return fmt.Errorf("log --follow %s: %w", l.agent, err)
		}
		defer sub.Close()
	}
	msgs, cur, bad, err := l.store.Follow(l.agent, fsstore.Cursor{})
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
			return nil // interrupted: how --follow ends
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

// print writes messages to stdout and invalid lines to stderr as warnings.
func (l *chatLog) print(msgs []fsstore.Message, bad []*fsstore.LineError) error {
	for _, le := range bad {
		fmt.Fprintf(l.e.stderr, "aipm: warning: skipped %v\n", le)
	}
	if l.json {
		if err := writeJSONLines(l.e, msgs); err != nil {
			return fmt.Errorf("log %s: %w", l.agent, err)
		}
		return nil
	}
	for _, m := range msgs {
		to := m.ReceiverID
		if to == "" {
			to = l.agent
		}
		writeMessage(l.e.stdout, m, m.SenderID+" → "+to)
	}
	return nil
}

// chatTimeLayout is how a message's time is shown, in local time.
const chatTimeLayout = "2006-01-02 15:04:05"

// writeMessage prints "TIME  WHO: TEXT", continuation lines of the text
// indented under WHO, "[system] " before WHO for what aipm wrote. Control
// characters are shown escaped, so a message cannot drive the terminal.
func writeMessage(w io.Writer, m fsstore.Message, who string) {
	stamp := m.CreatedAt
	if t, err := time.Parse(time.RFC3339Nano, m.CreatedAt); err == nil {
		stamp = t.Local().Format(chatTimeLayout)
	}
	if m.Kind == fsstore.KindSystem || m.SenderID == fsstore.SystemSender {
		who = "[system] " + who
	}
	indent := "\n" + strings.Repeat(" ", len(stamp)+2)
	text := strings.ReplaceAll(visible(strings.TrimRight(m.Content, "\n")), "\n", indent)
	fmt.Fprintf(w, "%s  %s: %s\n", visible(stamp), visible(who), text)
}

// visible escapes control characters other than newline and tab.
func visible(s string) string {
	isControl := func(r rune) bool {
		return (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r < 0xa0)
	}
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}
