package web_test

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"aipm/fsstore"
	"aipm/internal/browser"
	"aipm/internal/fixtures"
	"aipm/web"
)

// postOK posts body to path and returns the id the action answers; any
// refusal fails t.
func (v *visitor) postOK(t *testing.T, path, body string) string {
	t.Helper()
	code, out := v.post(t, path, body, nil)
	var answer struct {
		OK bool   `json:"ok"`
		ID string `json:"id"`
	}
	if code != 200 || json.Unmarshal([]byte(out), &answer) != nil || !answer.OK {
		t.Fatalf("POST %s %s: %d %s", path, body, code, out)
	}
	return answer.ID
}

// blockers is what task id waits for, as its file says.
func blockers(t *testing.T, store *fsstore.Store, id string) []string {
	t.Helper()
	task, err := store.Task(id)
	if err != nil {
		t.Fatal(err)
	}
	return task.BlockedBy
}

// taskFiles are the bytes of every task file, by name: what a refused
// action must leave as it was.
func taskFiles(t *testing.T, store *fsstore.Store, anyID string) map[string]string {
	t.Helper()
	path, err := store.DocPath(fsstore.Tasks, anyID)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(filepath.Dir(path), e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(data)
	}
	return out
}

// TestBoardDependActions: a task created from the page waits for the tasks
// it names (ids or unique starts, as the CLI's --after), and the depend
// action adds, removes and sets what a task waits for through the CLI's
// store call; each lands in the task's file.
func TestBoardDependActions(t *testing.T) {
	srv, store, _ := newBoard(t)
	v := visit(t, srv)
	design := v.postOK(t, "/api/tasks", `{"title":"Design","assignee":"coder"}`)
	build := v.postOK(t, "/api/tasks", `{"title":"Build","assignee":"coder","blockedBy":["`+design[:len(design)-4]+`"]}`)
	ship := v.postOK(t, "/api/tasks", `{"title":"Ship","assignee":"coder"}`)
	if got := blockers(t, store, build); !slices.Equal(got, []string{design}) {
		t.Fatalf("Build created after Design waits for %q, want [%s]", got, design)
	}
	for _, c := range []struct {
		name, body string
		want       []string
	}{
		{"add (the default)", `{"taskId":"` + ship + `","blockedBy":["` + build + `"]}`, []string{build}},
		{"add", `{"taskId":"` + ship + `","blockedBy":["` + design + `"],"change":"add"}`, []string{build, design}},
		{"remove", `{"taskId":"` + ship + `","blockedBy":["` + build + `"],"change":"remove"}`, []string{design}},
		{"set", `{"taskId":"` + ship + `","blockedBy":["` + build + `","` + design + `"],"change":"set"}`, []string{build, design}},
		{"set to nothing", `{"taskId":"` + ship + `","blockedBy":[],"change":"set"}`, nil},
	} {
		if id := v.postOK(t, "/api/tasks/depend", c.body); id != ship {
			t.Errorf("%s: answered id %s, want %s", c.name, id, ship)
		}
		if got := blockers(t, store, ship); !slices.Equal(got, c.want) {
			t.Errorf("%s: Ship waits for %q, want %q", c.name, got, c.want)
		}
	}
}

// TestBoardDependRefusals: what the depend and create actions refuse, each
// with its one sentence (and its code, for a cycle) and the request's
// status; the guards of every action hold for them; nothing refused
// changes a task file.
func TestBoardDependRefusals(t *testing.T) {
	srv, store, _ := newBoard(t)
	v := visit(t, srv)
	a := v.postOK(t, "/api/tasks", `{"title":"A","assignee":"coder"}`)
	b := v.postOK(t, "/api/tasks", `{"title":"B","assignee":"coder","blockedBy":["`+a+`"]}`)
	c := v.postOK(t, "/api/tasks", `{"title":"C","assignee":"coder","blockedBy":["`+b+`"]}`)
	before := taskFiles(t, store, a)
	for _, r := range []struct {
		name, path, body string
		header           map[string]string
		status           int
		want, code       string
	}{
		{"a cycle through two tasks", "/api/tasks/depend", `{"taskId":"` + a + `","blockedBy":["` + c + `"]}`, nil, 400,
			"would close the cycle " + a + " → " + c + " → " + b + " → " + a, "dependency_cycle"},
		{"a cycle set", "/api/tasks/depend", `{"taskId":"` + a + `","blockedBy":["` + b + `"],"change":"set"}`, nil, 400, "would close the cycle", "dependency_cycle"},
		{"itself", "/api/tasks/depend", `{"taskId":"` + a + `","blockedBy":["` + a + `"]}`, nil, 400, "cannot wait for itself", "dependency_cycle"},
		{"already waits", "/api/tasks/depend", `{"taskId":"` + b + `","blockedBy":["` + a + `"]}`, nil, 400, "already waits for " + a, "nothing_to_change"},
		{"does not wait", "/api/tasks/depend", `{"taskId":"` + c + `","blockedBy":["` + a + `"],"change":"remove"}`, nil, 400, "does not wait for " + a, "nothing_to_change"},
		{"no task named", "/api/tasks/depend", `{"taskId":"` + c + `","change":"add"}`, nil, 400, "name the tasks to wait for", ""},
		{"an unknown change", "/api/tasks/depend", `{"taskId":"` + c + `","blockedBy":["` + a + `"],"change":"swap"}`, nil, 400, `change "swap" is not one the board makes: use add, remove or set`, ""},
		{"a task that does not exist", "/api/tasks/depend", `{"taskId":"` + c + `","blockedBy":["tsk_0000"]}`, nil, 400, "blockedBy: ", ""},
		{"not a task id", "/api/tasks/depend", `{"taskId":"` + c + `","blockedBy":["nope!"]}`, nil, 400, "is not a task id", ""},
		{"too many", "/api/tasks/depend", `{"taskId":"` + c + `","blockedBy":[` + strings.Repeat(`"`+a+`",`, fsstore.MaxBlockers) + `"` + a + `"]}`, nil, 400, "at most 50 tasks", ""},
		{"no such waiting task", "/api/tasks/depend", `{"taskId":"tsk_0000","blockedBy":["` + a + `"]}`, nil, 400, "", ""},
		{"a new task after one that does not exist", "/api/tasks", `{"title":"D","blockedBy":["tsk_0000"]}`, nil, 400, "blockedBy: ", ""},
		{"no CSRF token", "/api/tasks/depend", `{"taskId":"` + c + `","blockedBy":["` + a + `"]}`, map[string]string{"X-CSRF-Token": ""}, 403, "CSRF", ""},
		{"a foreign Origin", "/api/tasks/depend", `{"taskId":"` + c + `","blockedBy":["` + a + `"]}`, map[string]string{"Origin": "http://evil.example"}, 403, "another origin", ""},
		{"as an AI agent", "/api/tasks/depend", `{"taskId":"` + c + `","blockedBy":["` + a + `"],"as":"coder"}`, nil, 400, "not a human", ""},
		{"an unknown field", "/api/tasks/depend", `{"taskId":"` + c + `","on":["` + a + `"]}`, nil, 400, "not the JSON this action takes", ""},
	} {
		status, body := v.post(t, r.path, r.body, r.header)
		var answer struct{ Error, Code string }
		if err := json.Unmarshal([]byte(body), &answer); err != nil {
			t.Errorf("%s: the answer is no JSON: %s", r.name, body)
			continue
		}
		if status != r.status || !strings.Contains(answer.Error, r.want) || answer.Code != r.code {
			t.Errorf("%s: %d %s; want %d saying %q with code %q", r.name, status, body, r.status, r.want, r.code)
		}
		if strings.Count(strings.TrimSuffix(answer.Error, "."), ". ") > 0 || strings.Contains(answer.Error, "\n") {
			t.Errorf("%s: %q is more than one sentence", r.name, answer.Error)
		}
	}
	if after := taskFiles(t, store, a); !maps.Equal(after, before) {
		t.Errorf("refused actions changed the task files:\nbefore %v\nafter  %v", slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
	}
}

// TestStateShowsWaits: the State says, as fsstore judges it, what each
// open task waits for (its blockers not done, a subtask someone else has,
// a blocker that does not exist) in the CLI's words too, which tasks are
// ready, what waits for each, the counts of aipm status and the cycles a
// hand edit made; a finished task waits for nothing.
func TestStateShowsWaits(t *testing.T) {
	srv, store, fix := newBoard(t)
	v := visit(t, srv)
	design := v.postOK(t, "/api/tasks", `{"title":"Design","assignee":"coder"}`)
	build := v.postOK(t, "/api/tasks", `{"title":"Build","assignee":"coder","blockedBy":["`+design+`"]}`)
	plan := v.postOK(t, "/api/tasks", `{"title":"Plan","assignee":"lead"}`)
	step := p2task(t, store, fsstore.NewTask{Title: "Step", Assignee: "coder", ParentID: plan, Requester: "lead"})
	x := v.postOK(t, "/api/tasks", `{"title":"X","assignee":"coder"}`)
	y := v.postOK(t, "/api/tasks", `{"title":"Y","assignee":"coder","blockedBy":["`+x+`"]}`)
	orphan := v.postOK(t, "/api/tasks", `{"title":"Orphan","assignee":"coder"}`)
	// Hand edits close a cycle and name a task that does not exist: aipm
	// refuses both, the files may hold them.
	missing := "tsk_" + strings.Repeat("0", 26)
	for id, on := range map[string]string{x: y, orphan: missing} {
		if err := fixtures.Of(store).HandEdit(fsstore.Tasks, id, func(f map[string]any) { f["blockedBy"] = []string{on} }); err != nil {
			t.Fatal(err)
		}
	}

	// The feed saw both hand edits (each rebuilds the State: one built
	// while an edit lands may show it in part).
	st := v.stateWhen(t, func(st web.State) bool {
		ready, waiting, err := store.TaskCounts()
		o, xv := viewOf(st, orphan), viewOf(st, x)
		return len(o.Waits) > 0 && len(xv.Waits) > 0 && len(st.Cycles) > 0 && err == nil && st.Ready == ready && st.Waiting == waiting && waiting == 5
	})
	checkViews(t, store, st, []viewCase{
		{"a blocker to do", design, true, nil, []string{build}},
		{"a task waiting for it", build, false, []web.WaitView{{TaskID: design, Status: fsstore.StatusTodo}}, nil},
		{"a parent whose subtask another has", plan, false, []web.WaitView{{TaskID: step, Status: fsstore.StatusTodo, Subtask: true}}, nil},
		{"the subtask", step, true, nil, []string{plan}},
		{"a task in progress", fix.ID, false, nil, nil},
		{"a cycle's first", x, false, []web.WaitView{{TaskID: y, Status: fsstore.StatusTodo}}, []string{y}},
		{"a cycle's second", y, false, []web.WaitView{{TaskID: x, Status: fsstore.StatusTodo}}, []string{x}},
		{"a task waiting for one that does not exist", orphan, false, []web.WaitView{{TaskID: missing}}, nil},
	})
	if st.Ready != 2 || st.Waiting != 5 {
		t.Errorf("counts in the State: %d ready, %d waiting; want 2 and 5", st.Ready, st.Waiting)
	}
	if len(st.Cycles) != 1 || !strings.Contains(st.Cycles[0], "wait for one another") || !strings.Contains(st.Cycles[0], "aipm task depend") {
		t.Errorf("cycles in the State: %q, want the hand-made one with how to break it", st.Cycles)
	}

	// Design done: Build no longer waits, and starts by itself (assigned,
	// to do); Design holds up nothing. X cancelled: finished, it waits for
	// nothing, and Y still waits for it (only done releases a blocker).
	cfg, _ := store.LoadConfig()
	for _, c := range []struct {
		id, by string
		change fsstore.TaskChange
	}{
		{design, "coder", fsstore.TaskChange{Status: fsstore.StatusInProgress}},
		{design, "coder", fsstore.TaskChange{Status: fsstore.StatusDone}},
		{x, "lead", fsstore.TaskChange{Status: fsstore.StatusCancelled, Reason: "not needed"}},
	} {
		if _, err := store.UpdateTask(t.Context(), cfg, c.id, c.by, c.change); err != nil {
			t.Fatal(err)
		}
	}
	st = v.stateWhen(t, func(st web.State) bool { // Build started by itself, X cancelled
		return viewOf(st, build).StartedReady && viewOf(st, x).Status == fsstore.StatusCancelled
	})
	checkViews(t, store, st, []viewCase{
		{"a blocker done", design, false, nil, nil},
		{"the task it held up, started", build, false, nil, nil},
		{"a blocker cancelled, itself waiting", x, false, nil, []string{y}},
		{"a task waiting for a cancelled one", y, false, []web.WaitView{{TaskID: x, Status: fsstore.StatusCancelled}}, nil},
	})
}

// viewOf is task id as st shows it (zero when it does not).
func viewOf(st web.State, id string) web.TaskView {
	i := slices.IndexFunc(st.Tasks, func(tv web.TaskView) bool { return tv.ID == id })
	if i < 0 {
		return web.TaskView{}
	}
	return st.Tasks[i]
}

// viewCase is what the State should say of one task.
type viewCase struct {
	name     string
	id       string
	ready    bool
	waits    []web.WaitView
	waitedBy []string
}

// checkViews fails t unless st shows each case's task as it says, with
// what it waits for in fsstore's words (WaitsText).
func checkViews(t *testing.T, store *fsstore.Store, st web.State, cases []viewCase) {
	t.Helper()
	tasks := map[string]web.TaskView{}
	for _, tv := range st.Tasks {
		tasks[tv.ID] = tv
	}
	for _, c := range cases {
		tv, ok := tasks[c.id]
		if !ok {
			t.Errorf("%s: not in the State", c.name)
			continue
		}
		if tv.Ready != c.ready || !slices.Equal(tv.Waits, c.waits) || !slices.Equal(tv.WaitedBy, c.waitedBy) {
			t.Errorf("%s: ready %v, waits %+v, waited by %q; want %v, %+v, %q", c.name, tv.Ready, tv.Waits, tv.WaitedBy, c.ready, c.waits, c.waitedBy)
		}
		want := ""
		if c.waits != nil {
			deps, err := store.TaskDeps([]string{c.id})
			if err != nil {
				t.Fatal(err)
			}
			want = fsstore.WaitsText(deps[c.id].Waits)
		}
		if tv.WaitsText != want {
			t.Errorf("%s: waitsText %q, want %q", c.name, tv.WaitsText, want)
		}
	}
}

// stateWhen is the first State on the event stream that ok accepts
// (bounded generously; never a timing assertion).
func (v *visitor) stateWhen(t *testing.T, ok func(web.State) bool) web.State {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", v.srv.Origin()+"/api/events", nil)
	resp, err := v.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st web.State
	for e := range readEvents(resp.Body) {
		st = web.State{}
		if err := json.Unmarshal([]byte(e.data), &st); err != nil {
			t.Fatal(err)
		}
		if ok(st) {
			return st
		}
	}
	t.Fatalf("no State as wanted on the stream; the last: %+v", st)
	return st
}

// p2task creates a task through the store, as another process would.
func p2task(t *testing.T, store *fsstore.Store, in fsstore.NewTask) string {
	t.Helper()
	cfg, err := store.LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	task, err := store.CreateTask(t.Context(), cfg, in)
	if err != nil {
		t.Fatal(err)
	}
	return task.ID
}

// TestBoardShowsWhyAndRefusesCycle: in the page, a waiting task's card
// says what it waits for (in the CLI's words as its tooltip), a ready one
// is marked, a blocker names what it holds up, and the graph draws each
// dependency; the depend form refuses a cycle, saying so in one sentence
// and changing nothing, makes a task wait and, from a card, stop waiting;
// a task added after another waits for it.
func TestBoardShowsWhyAndRefusesCycle(t *testing.T) {
	ctx := testCtx(t)
	p := newProject(t, ctx)
	design := p.task(fsstore.NewTask{Title: "Design the schema", Assignee: "coder"})
	build := p.task(fsstore.NewTask{Title: "Build the API", Assignee: "coder", BlockedBy: []string{design.ID}})
	docs := p.task(fsstore.NewTask{Title: "Write the docs", Assignee: "reviewer"})
	tab := openBoard(t, ctx, p.serve())
	card := func(id string) string { return "#board .card" + attr("data-task-id", id) }

	deps, err := p.store.TaskDeps([]string{build.ID})
	if err != nil {
		t.Fatal(err)
	}
	waits := deps[build.ID].Waits
	var shown struct{ Waits, Tip, Ready, HoldsUp string }
	if err := json.Unmarshal([]byte(eval[string](t, ctx, tab, `JSON.stringify({
		waits: document.querySelector(`+q(card(build.ID)+" .waits")+`)?.textContent,
		tip: document.querySelector(`+q(card(build.ID)+" .waits")+`)?.title,
		ready: document.querySelector(`+q(card(design.ID)+".is-ready .badge.ready")+`)?.textContent,
		holdsUp: document.querySelector(`+q(card(design.ID)+" .waited-by")+`)?.textContent,
	})`)), &shown); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(shown.Waits, "waits for") || !strings.Contains(shown.Waits, design.Title) || !strings.Contains(shown.Waits, "To do") ||
		shown.Tip != "waits for "+fsstore.WaitsText(waits) || shown.Ready != "ready" || shown.HoldsUp != "holds up "+build.Title {
		t.Errorf("the page shows %+v; want Build waiting for %q (tooltip the CLI's %q), Design ready and holding up Build", shown, design.Title, fsstore.WaitsText(waits))
	}
	edge := func(from, to string) string {
		return "#graph path.edge" + attr("data-from", from) + attr("data-to", to)
	}
	until(t, ctx, tab, has(edge(design.ID, build.ID))+" && "+has("#graph g.node"+attr("data-task-id", design.ID))+" && "+has("#graph g.node"+attr("data-task-id", build.ID)))

	// Design waiting for Build closes a cycle: refused, said, nothing changed.
	before := taskFiles(t, p.store, design.ID)
	dependFromPage(t, ctx, tab, design.ID, build.ID, "button.add-dep")
	until(t, ctx, tab, `document.getElementById("error").textContent.includes("would close the cycle")`)
	msg := eval[string](t, ctx, tab, `document.getElementById("error").textContent`)
	if want := design.ID + " → " + build.ID + " → " + design.ID; !strings.Contains(msg, want) || strings.Contains(strings.TrimSuffix(msg, "."), ". ") {
		t.Errorf("#error says %q; want one sentence naming the cycle %s", msg, want)
	}
	if after := taskFiles(t, p.store, design.ID); !maps.Equal(after, before) {
		t.Error("the refused cycle changed a task file")
	}

	// Docs waits for Build from the form, then stops from its card.
	dependFromPage(t, ctx, tab, docs.ID, build.ID, "button.add-dep")
	// (the page clears #error once the action is answered: success)
	until(t, ctx, tab, has(card(docs.ID)+" .wait"+attr("data-on", build.ID))+" && "+has(edge(build.ID, docs.ID))+` && document.getElementById("error").textContent === ""`)
	if got := blockers(t, p.store, docs.ID); !slices.Equal(got, []string{build.ID}) {
		t.Errorf("Docs waits for %q after the form, want [%s]", got, build.ID)
	}
	click(t, ctx, tab, card(docs.ID)+" .wait"+attr("data-on", build.ID)+" button.unwait")
	until(t, ctx, tab, "!"+has(card(docs.ID)+" .waits")+" && !"+has(edge(build.ID, docs.ID)))
	if got := blockers(t, p.store, docs.ID); len(got) != 0 {
		t.Errorf("Docs waits for %q after its card's button, want nothing", got)
	}

	// A task added after Design waits for it.
	eval[bool](t, ctx, tab, `(() => { const f = document.querySelector("#task-form"); f.elements.title.value = "Deploy"; f.elements.after.value = `+q(design.ID)+`; f.requestSubmit(); return true })()`)
	until(t, ctx, tab, `[...document.querySelectorAll("#board .card")].some(c => c.querySelector(".title").textContent === "Deploy" && c.querySelector(".wait`+attr("data-on", design.ID)+`"))`)
	tasks, _, _, err := p.store.Tasks(fsstore.TaskFilter{})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(tasks, func(t fsstore.Task) bool { return t.Title == "Deploy" })
	if i < 0 || !slices.Equal(tasks[i].BlockedBy, []string{design.ID}) {
		t.Errorf("the task added after Design: %+v, want it to wait for %s", tasks, design.ID)
	}
}

// dependFromPage chooses, in the depend form, that task waits for on, and
// clicks the button btn names.
func dependFromPage(t *testing.T, ctx context.Context, tab *browser.Tab, task, on, btn string) {
	t.Helper()
	if !eval[bool](t, ctx, tab, `(() => { const f = document.querySelector("#depend-form"); f.elements.task.value = `+q(task)+`; f.elements.on.value = `+q(on)+`; return f.elements.task.value === `+q(task)+` && f.elements.on.value === `+q(on)+` })()`) {
		t.Fatalf("the depend form cannot choose %s waiting for %s", task, on)
	}
	click(t, ctx, tab, "#depend-form "+btn)
}
