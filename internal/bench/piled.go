package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"aipm/fsstore"
	"aipm/internal/fixtures"
)

// piledUp is P6 (and P5 at its large case): the p50 of a call with many
// records piled up against the same call with 100 of them, each in its own
// project and server. fill piles up n records for agent r (whose chat
// session the server holds); call makes one timed call; between, when not
// nil, runs untimed before each call.
func (b *bench) piledUp(id, what string, large int, fill func(store *fsstore.Store, n int) error, call, between func(s *server) error) ([]Row, error) {
	b.progress("%s: %s, %d vs 100", id, what, large)
	measure := func(n int) ([]time.Duration, float64, cpuUsage, error) {
		var usage cpuUsage
		store, keys, err := b.project(fmt.Sprintf("%s-%d", strings.ToLower(id), n), "r", "w")
		if err != nil {
			return nil, 0, usage, err
		}
		if err := fill(store, n); err != nil {
			return nil, 0, usage, err
		}
		s, err := b.serve(store, "r", keys["r"], io.Discard)
		if err != nil {
			return nil, 0, usage, err
		}
		defer s.close()
		var lat []time.Duration
		b.doing.set(fmt.Sprintf("%s: %d calls with %d piled up", id, b.reads, n))
		for i := 0; i < b.reads; i++ {
			if between != nil {
				if err := between(s); err != nil {
					return nil, 0, usage, err
				}
			}
			usage.start()
			start := time.Now()
			if err := call(s); err != nil {
				return nil, 0, usage, err
			}
			lat = append(lat, time.Since(start))
			usage.stop()
		}
		slices.Sort(lat)
		return lat, peakRSS(s.cmd.Process.Pid), usage, nil
	}
	big, rss, usage, err := measure(large)
	if err != nil {
		return nil, err
	}
	small, _, _, err := measure(100)
	if err != nil {
		return nil, err
	}
	ratio := float64(percentile(big, 50)) / float64(percentile(small, 50))
	return []Row{Row{
		id: id, what: fmt.Sprintf("%s p50, %d vs 100 (slowest %s)", what, large, ms(big[len(big)-1])),
		aipm: ms(percentile(big, 50)), floor: ms(percentile(small, 50)) + " (100)",
		compared: fmt.Sprintf("%.2fx, RSS %.1f MB", ratio, rss), target: fmt.Sprintf("<= 1.5x, RSS <= %d MB", rssTarget),
		cpu:        usage.String(),
		aipmValues: values{"p50_ms": msOf(percentile(big, 50)), "slowest_ms": msOf(big[len(big)-1]), "peak_rss_mb": rss}, floorValues: median(small),
	}.judged(atMost("p50 / floor p50", ratio, 1.5, "x"), atMost("peak RSS", rss, rssTarget, "MB"))}, nil
}

// ownSent is P6a: get_next_action when r's chat log holds n of r's own sent
// copies past its cursor and nothing unread but one notification (so the
// call answers at once, after the chat-work check has looked past them).
func (b *bench) ownSent() ([]Row, error) {
	return b.piledUp("P6a", "get_next_action over own sent copies", b.history, b.fillOwnSent, b.nextActionNotified, nil)
}

// fillOwnSent writes n of r's own sent copies to r's chat log, and one
// notification.
func (b *bench) fillOwnSent(store *fsstore.Store, n int) error {
	path, _ := store.ChatPath("r")
	if err := fixtures.Of(store).Lines(path, n, func(i int) any {
		return fsstore.Message{ID: fsstore.NewID(fsstore.PrefixMessage), SenderID: "r", ReceiverID: "w", Content: fmt.Sprintf("sent line %d: a message of ordinary length, about like this one", i), CreatedAt: "2026-11-21T12:00:00.000000Z"}
	}); err != nil {
		return err
	}
	_, err := store.Notify(b.ctx, "r", fsstore.Notification{Message: "keeps get_next_action from waiting"})
	return err
}

// nextActionNotified calls get_next_action, which answers
// get_notifications at once.
func (b *bench) nextActionNotified(s *server) error {
	var out struct{ Action string }
	if err := s.call(b.ctx, "get_next_action", map[string]any{}, &out); err != nil {
		return err
	}
	if out.Action != fsstore.ActGetNotifications {
		return fmt.Errorf("get_next_action answered %q, want %s", out.Action, fsstore.ActGetNotifications)
	}
	return nil
}

// unreadNotifications is P6b: a gated call (get_task) when r has n
// unread notifications.
func (b *bench) unreadNotifications() ([]Row, error) {
	n := 100_000
	if b.history < 1_000_000 {
		n = 10_000
	}
	return b.piledUp("P6b", "gated call (get_task) with unread notifications", n, func(store *fsstore.Store, n int) error {
		path, _ := store.NotificationsPath("r")
		created := time.Now().UTC()
		return fixtures.Of(store).Lines(path, n, func(i int) any {
			return fsstore.Notification{ID: fsstore.NewID(fsstore.PrefixNotification), Type: fsstore.NotifyInfo, Message: fmt.Sprintf("notification %d", i), CreatedAt: created}
		})
	}, func(s *server) error {
		return s.call(b.ctx, "get_task", map[string]any{}, nil)
	}, nil)
}

// piled is the size of P6's large task and session piles.
func (b *bench) piled() int {
	if b.history < 1_000_000 {
		return 1_000
	}
	return 10_000
}

// listTasks is P6c: list_tasks with its default arguments (the newest 50)
// among n tasks.
func (b *bench) listTasks() ([]Row, error) {
	return b.piledUp("P6c", "list_tasks (default args) among tasks", b.piled(), writeTasks, func(s *server) error {
		var out struct {
			Tasks []json.RawMessage `json:"tasks"`
		}
		if err := s.call(b.ctx, "list_tasks", map[string]any{}, &out); err != nil {
			return err
		}
		if len(out.Tasks) != 50 {
			return fmt.Errorf("list_tasks returned %d tasks, want 50", len(out.Tasks))
		}
		return nil
	}, nil)
}

// myTask is P6d: get_task among n tasks, of which r has a few open.
func (b *bench) myTask() ([]Row, error) {
	return b.piledUp("P6d", "get_task among tasks", b.piled(), writeTasks, func(s *server) error {
		var out struct {
			Task     *struct{ ID string } `json:"task"`
			Assigned []json.RawMessage    `json:"assigned"`
		}
		if err := s.call(b.ctx, "get_task", map[string]any{}, &out); err != nil {
			return err
		}
		if out.Task == nil || len(out.Assigned) != 1 {
			return fmt.Errorf("get_task: task %v and %d others, want r's task in progress and 1 other", out.Task, len(out.Assigned))
		}
		return nil
	}, nil)
}

// authTasks is P6e: authenticate (purpose chosen from the work: r's task
// in progress) among n tasks; the session it opens is logged out untimed.
func (b *bench) authTasks() ([]Row, error) {
	return b.piledUp("P6e", "authenticate among tasks", b.piled(), writeTasks, b.authenticate(fsstore.PurposeTask), b.logout)
}

// authSessions is P6f: authenticate among n sessions of other agents (half
// live, half expired and left for the watcher's sweep), r having a task in
// progress.
func (b *bench) authSessions() ([]Row, error) {
	return b.piledUp("P6f", "authenticate among other agents' sessions", b.piled(), func(store *fsstore.Store, n int) error {
		if err := writeTasks(store, 4); err != nil {
			return err
		}
		return writeSessions(store, n)
	}, b.authenticate(fsstore.PurposeTask), b.logout)
}

// authOwnSent is P6g: authenticate when r's chat log holds n of its own
// sent copies and then one unread message (its chat-work check passes over
// the copies: once per process, the row's slowest call).
func (b *bench) authOwnSent() ([]Row, error) {
	return b.piledUp("P6g", "authenticate over own sent copies", b.history, func(store *fsstore.Store, n int) error {
		path, _ := store.ChatPath("r")
		return fixtures.Of(store).Lines(path, n+1, func(i int) any {
			if i == n {
				return fsstore.Message{ID: fsstore.NewID(fsstore.PrefixMessage), SenderID: "w", Content: "the one unread message", CreatedAt: "2026-11-21T12:00:00.000000Z"}
			}
			return fsstore.Message{ID: fsstore.NewID(fsstore.PrefixMessage), SenderID: "r", ReceiverID: "w", Content: fmt.Sprintf("sent line %d: a message of ordinary length, about like this one", i), CreatedAt: "2026-11-21T12:00:00.000000Z"}
		})
	}, b.authenticate(fsstore.PurposeChat), b.logout)
}

// authenticate is a timed call: authenticate as the server's agent without
// naming a purpose, expecting want; the new session's token replaces the
// server's.
func (b *bench) authenticate(want string) func(s *server) error {
	return func(s *server) error {
		var out struct {
			SessionToken string `json:"session_token"`
			Purpose      string `json:"purpose"`
		}
		if err := callTool(b.ctx, s.cs, "authenticate", map[string]any{"agent_id": s.agent, "passkey": s.passkey}, &out); err != nil {
			return err
		}
		if out.Purpose != want {
			return fmt.Errorf("authenticate chose %q, want %s", out.Purpose, want)
		}
		s.token = out.SessionToken
		return nil
	}
}

// logout ends the server's session, so that the next authenticate finds
// its purpose free again.
func (b *bench) logout(s *server) error {
	return s.call(b.ctx, "logout", map[string]any{}, nil)
}

// writeTasks writes n task files as a human's editor would (no aipm
// involved): most are done; the newest four are open, two for r (one in
// progress) and two for w.
func writeTasks(store *fsstore.Store, n int) error {
	now := time.Now().UTC()
	for i := range n {
		t := fsstore.Task{
			ID: fsstore.NewID(fsstore.PrefixTask), Title: fmt.Sprintf("task %d", i), Description: "a task of ordinary length, written for the benchmark",
			Status: fsstore.StatusDone, Priority: "normal", Assignee: []string{"r", "w"}[i%2], ApprovalStatus: fsstore.ApprovalApproved,
			StatusChangedBy: "w", StatusChangedAt: now, CreatedAt: now, UpdatedAt: now,
		}
		switch n - i {
		case 4:
			t.Status = fsstore.StatusInProgress
		case 3, 2, 1:
			t.Status = fsstore.StatusTodo
		}
		if err := fixtures.Of(store).Doc(fsstore.Tasks, t.ID, t); err != nil {
			return err
		}
	}
	return nil
}

// writeSessions writes n session files of 50 other agents, half live (of
// this process) and half expired an hour ago, without the session index
// (as an older aipm left them: the first authenticate builds it).
func writeSessions(store *fsstore.Store, n int) error {
	now := time.Now().UTC()
	for i := range n {
		ses := fsstore.Session{
			ID: fsstore.NewID(fsstore.PrefixSession), Agent: fmt.Sprintf("other%d", i%50), Purpose: []string{fsstore.PurposeChat, fsstore.PurposeTask}[i/50%2],
			TokenHash: strings.Repeat("0", 64), PID: os.Getpid(), CreatedAt: now, LastSeenAt: now, Idle: fsstore.Duration{Duration: time.Hour},
		}
		if i%2 == 1 {
			ses.LastSeenAt = now.Add(-2 * time.Hour)
		}
		if err := fixtures.Of(store).Doc(fsstore.Sessions, ses.ID, ses); err != nil {
			return err
		}
	}
	return nil
}
