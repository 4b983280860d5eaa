package web_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"aipm/fsstore"
	"aipm/web"
)

// TestStateCarriesTheVocabulary: the State carries exactly fsstore's task
// statuses, in its order and with its rule of an open one, and its
// priorities, lowest first, with the default; a project that cannot be
// read at all still carries them.
func TestStateCarriesTheVocabulary(t *testing.T) {
	srv, _, _ := newBoard(t)
	broken, err := fsstore.Init(t.TempDir(), "broken")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(broken.ConfigPath(), []byte("[project\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	brokenSrv, err := web.Start(ctx, broken, web.Options{})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	defer func() { cancel(); brokenSrv.Wait() }()

	for _, c := range []struct {
		name string
		srv  *web.Server
	}{{"a project", srv}, {"an unreadable project", brokenSrv}} {
		st := stateOf(t, c.srv)
		if c.srv == brokenSrv && len(st.Problems) == 0 {
			t.Fatalf("%s: no problem in the State", c.name)
		}
		var names []string
		for _, s := range st.Statuses {
			names = append(names, s.Name)
			if s.Open != fsstore.StatusOpen(s.Name) {
				t.Errorf("%s: status %s open %v, want fsstore's %v", c.name, s.Name, s.Open, fsstore.StatusOpen(s.Name))
			}
			if s.Label == "" {
				t.Errorf("%s: status %s has no label", c.name, s.Name)
			}
			if s.Blocked != (s.Name == fsstore.StatusBlocked) {
				t.Errorf("%s: status %s blocked %v", c.name, s.Name, s.Blocked)
			}
		}
		if !slices.Equal(names, fsstore.Statuses) {
			t.Errorf("%s: statuses %q, want fsstore's %q", c.name, names, fsstore.Statuses)
		}
		if !slices.Equal(st.Priorities, fsstore.Priorities) || st.DefaultPriority != fsstore.DefaultPriority {
			t.Errorf("%s: priorities %q (default %q), want fsstore's %q (default %q)", c.name, st.Priorities, st.DefaultPriority, fsstore.Priorities, fsstore.DefaultPriority)
		}
	}
}

// TestPageRestatesNoStatus: the page's script and markup name no task
// status or priority; they take them from the State.
func TestPageRestatesNoStatus(t *testing.T) {
	for _, f := range []string{"app.js", "index.html"} {
		src, err := os.ReadFile(filepath.Join("static", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range slices.Concat(fsstore.Statuses, fsstore.Priorities) {
			for _, quoted := range []string{"'" + name + "'", `"` + name + `"`} {
				if strings.Contains(string(src), quoted) {
					t.Errorf("static/%s names %s: take it from the State (statuses, priorities)", f, quoted)
				}
			}
		}
	}
}

func stateOf(t *testing.T, srv *web.Server) web.State {
	t.Helper()
	v := visit(t, srv)
	resp, err := v.c.Get(srv.Origin() + "/api/state")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st web.State
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestBoardTakesTheVocabulary: in the page, the board's columns, a card's
// status choices and the new task's priorities are the State's, in order;
// finished columns are marked, open ones sort by priority, and a task
// added with a chosen priority has it.
func TestBoardTakesTheVocabulary(t *testing.T) {
	ctx := testCtx(t)
	p := newProject(t, ctx)
	low := p.task(fsstore.NewTask{Title: "Low", Assignee: "coder", Priority: fsstore.Priorities[0]})
	top := p.task(fsstore.NewTask{Title: "Top", Assignee: "coder", Priority: fsstore.Priorities[len(fsstore.Priorities)-1]})
	plain := p.task(fsstore.NewTask{Title: "Plain", Assignee: "coder"})
	tab := openBoard(t, ctx, p.serve())

	var page struct {
		Columns, Closed, Choices, Priorities, Todo []string
		Priority                                   string
	}
	js := `JSON.stringify({
		columns: [...document.querySelectorAll("#board .column")].map(c => c.dataset.status),
		closed: [...document.querySelectorAll("#board .column.closed")].map(c => c.dataset.status),
		choices: [...document.querySelectorAll("#board .card select.set-status")[0].options].map(o => o.value),
		priorities: [...document.querySelectorAll("#task-form select[name=priority] option")].map(o => o.value),
		priority: document.querySelector("#task-form select[name=priority]").value,
		todo: [...document.querySelectorAll("#board .column` + attr("data-status", fsstore.StatusTodo) + ` .card")].map(c => c.dataset.taskId),
	})`
	if err := json.Unmarshal([]byte(eval[string](t, ctx, tab, js)), &page); err != nil {
		t.Fatal(err)
	}
	var closed []string
	for _, s := range fsstore.Statuses {
		if !fsstore.StatusOpen(s) {
			closed = append(closed, s)
		}
	}
	for _, c := range []struct {
		what      string
		got, want []string
	}{
		{"columns", page.Columns, fsstore.Statuses},
		{"finished columns", page.Closed, closed},
		{"a card's status choices", page.Choices, fsstore.Statuses},
		{"the new task's priorities", page.Priorities, fsstore.Priorities},
		{"the to-do column, highest priority first", page.Todo, []string{top.ID, plain.ID, low.ID}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s: %q, want %q", c.what, c.got, c.want)
		}
	}
	if page.Priority != fsstore.DefaultPriority {
		t.Errorf("the new task's priority starts at %q, want %q", page.Priority, fsstore.DefaultPriority)
	}

	chosen := fsstore.Priorities[len(fsstore.Priorities)-2]
	eval[bool](t, ctx, tab, `(() => { const f = document.querySelector("#task-form"); f.elements.title.value = "Chosen"; f.elements.priority.value = `+q(chosen)+`; f.requestSubmit(); return true })()`)
	until(t, ctx, tab, `[...document.querySelectorAll("#board .card .title")].some(e => e.textContent === "Chosen")`)
	tasks, _, _, err := p.store.Tasks(fsstore.TaskFilter{})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(tasks, func(t fsstore.Task) bool { return t.Title == "Chosen" })
	if i < 0 || tasks[i].Priority != chosen {
		t.Errorf("the task added from the page: %+v, want priority %s", tasks, chosen)
	}
}

// TestStateShowsFailedRuns: an agent's last run that failed is on the
// board with the sentence its human was told; a run that worked is not.
func TestStateShowsFailedRuns(t *testing.T) {
	srv, store, _ := newBoard(t)
	ctx := context.Background()
	cfg, err := store.LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []fsstore.Outcome{
		{RunID: "run_1", Agent: "coder", Purpose: fsstore.PurposeTask, State: fsstore.OutcomeNoAuth, Problem: "coder's task run had not authenticated within 2m", LogLine: "Reconnecting… waiting for network"},
		{RunID: "run_2", Agent: "coder", Purpose: fsstore.PurposeChat, State: fsstore.OutcomeWorked},
	} {
		if _, err := store.Runs().RecordOutcome(ctx, cfg, o); err != nil {
			t.Fatal(err)
		}
	}
	// The State is rebuilt on the outcomes' file events: look until it has
	// them (or the deadline), then judge what it shows.
	var problems []web.ProblemView
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		st := stateOf(t, srv)
		i := slices.IndexFunc(st.Agents, func(a web.AgentView) bool { return a.ID == "coder" })
		if i < 0 {
			t.Fatal("no agent coder on the board")
		}
		if problems = st.Agents[i].Problems; len(problems) > 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(problems) != 1 || problems[0].Purpose != fsstore.PurposeTask || problems[0].State != fsstore.OutcomeNoAuth ||
		!strings.Contains(problems[0].Problem, "had not authenticated") || problems[0].LogLine != "Reconnecting… waiting for network" {
		t.Fatalf("coder's problems on the board: %+v, want the task run that never authenticated", problems)
	}
}
