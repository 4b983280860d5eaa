package hook

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"aipm/fsstore"
)

// TestPendingWorkIsTheRule: what the session start calls pending work is
// what fsstore's rule calls work (Next.IsWorkFor), purpose by purpose.
func TestPendingWorkIsTheRule(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, h *Hook)
		want  map[string]string // purpose -> what pendingWork says
	}{
		{"nothing", func(*testing.T, *Hook) {},
			map[string]string{fsstore.PurposeTask: "none", fsstore.PurposeChat: "none"}},
		{"a task to do", func(t *testing.T, h *Hook) { newTask(t, h, fsstore.StatusTodo) },
			map[string]string{fsstore.PurposeTask: "none", fsstore.PurposeChat: "none"}},
		{"a task in progress", func(t *testing.T, h *Hook) { newTask(t, h, fsstore.StatusInProgress) },
			map[string]string{fsstore.PurposeTask: `"Write the parser" in progress`, fsstore.PurposeChat: "none"}},
		{"an unread message", func(t *testing.T, h *Hook) {
			if _, err := h.Store.Send(context.Background(), h.Config, fsstore.OutgoingMessage{From: "lead", To: h.Agent, Content: "hello"}); err != nil {
				t.Fatal(err)
			}
		}, map[string]string{fsstore.PurposeTask: "none", fsstore.PurposeChat: "chat: get pending messages"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHook(t)
			c.setup(t, h)
			for purpose, want := range c.want {
				h.Purpose = purpose
				got, err := h.pendingWork(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(got, want) {
					t.Errorf("%s: pending work %q, want %q", purpose, got, want)
				}
				next, err := h.Store.Work(context.Background(), h.Config, h.Agent, purpose, nil)
				if err != nil {
					t.Fatal(err)
				}
				if isWork := got != "none"; isWork != next.IsWorkFor(purpose) {
					t.Errorf("%s: pending work %q, but the rule says work %v (action %s)", purpose, got, next.IsWorkFor(purpose), next.Action)
				}
			}
		})
	}
}

// TestHookAsksTheRule: the hook decides what is work by asking
// Next.IsWorkFor, never by comparing actions itself.
func TestHookAsksTheRule(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, restated := range []string{"fsstore.ActWork", "fsstore.ActWait"} {
			if strings.Contains(string(src), restated) {
				t.Errorf("%s names %s: ask next.IsWorkFor(purpose) instead", f, restated)
			}
		}
	}
}

func newHook(t *testing.T) *Hook {
	t.Helper()
	ctx := context.Background()
	store, err := fsstore.Init(t.TempDir(), "hooktest")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []fsstore.NewAgent{
		{ID: "lead", Type: fsstore.AgentHuman, Role: fsstore.RoleManager},
		{ID: "coder", Type: fsstore.AgentAI, Parent: "lead"},
	} {
		if _, err := store.AddAgent(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := store.LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	return &Hook{Store: store, Config: cfg, Agent: "coder"}
}

func newTask(t *testing.T, h *Hook, status string) {
	t.Helper()
	in := fsstore.NewTask{Title: "Write the parser", Assignee: h.Agent, Requester: "lead", Status: status}
	if _, err := h.Store.CreateTask(context.Background(), h.Config, in); err != nil {
		t.Fatal(err)
	}
}
