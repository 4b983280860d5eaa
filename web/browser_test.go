package web_test

// The page of aipm web in a real headless Chromium (internal/browser),
// against web.Start on projects built with fsstore: what the board shows,
// that changes made by other processes and by hand edits reach it live,
// that its buttons and forms land in the files, that a message is text
// and never markup, and that the page asks nothing of any other host.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"aipm/fsstore"
	"aipm/internal/browser"
	"aipm/internal/fixtures"
	"aipm/internal/testenv"
	"aipm/web"
)

// aipmBin is the aipm binary, built once, for changes made by another
// process (aipm send).
var aipmBin string

// shared is the one browser of the package's tests (nil without
// Chromium): each test opens its own tab, in its own browser context.
var shared *browser.Browser

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "aipm-web-test-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	aipmBin = filepath.Join(dir, "aipm")
	build := exec.Command("go", append(append([]string{"build"}, testenv.GoBuildFlags()...), "-o", aipmBin, "../cmd/aipm")...)
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build aipm:", err)
		return 1
	}
	b, err := browser.Start(context.Background())
	switch {
	case errors.Is(err, browser.ErrMissing):
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		return 1
	default:
		shared = b
		defer b.Close()
	}
	return m.Run()
}

// project is a test project: a human lead and two AI agents.
type project struct {
	t     *testing.T
	ctx   context.Context
	store *fsstore.Store
	cfg   *fsstore.Config
}

func newProject(t *testing.T, ctx context.Context) *project {
	t.Helper()
	return newNamedProject(t, ctx, "webtest")
}

func newNamedProject(t *testing.T, ctx context.Context, name string) *project {
	t.Helper()
	store, err := fsstore.Init(t.TempDir(), name)
	if err != nil {
		t.Fatal(err)
	}
	p := &project{t: t, ctx: ctx, store: store}
	for _, a := range []fsstore.NewAgent{
		{ID: "lead", Type: fsstore.AgentHuman, Role: fsstore.RoleManager},
		{ID: "coder", Type: fsstore.AgentAI, Parent: "lead"},
		{ID: "reviewer", Type: fsstore.AgentAI, Parent: "lead"},
	} {
		if _, err := store.AddAgent(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	if p.cfg, err = store.LoadConfig(); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *project) task(in fsstore.NewTask) fsstore.Task {
	p.t.Helper()
	if in.Requester == "" {
		in.Requester = "lead"
	}
	task, err := p.store.CreateTask(p.ctx, p.cfg, in)
	if err != nil {
		p.t.Fatal(err)
	}
	return task
}

// move changes a task's status as its assignee would, through each step
// (a cancel as lead would: an agent never cancels).
func (p *project) move(id string, steps ...fsstore.TaskChange) fsstore.Task {
	p.t.Helper()
	var task fsstore.Task
	for _, ch := range steps {
		by := "coder"
		if ch.Status == fsstore.StatusCancelled {
			by = "lead"
		}
		var err error
		if task, err = p.store.UpdateTask(p.ctx, p.cfg, id, by, ch); err != nil {
			p.t.Fatal(err)
		}
	}
	return task
}

func (p *project) send(from, to, content string) fsstore.Message {
	p.t.Helper()
	msg, err := p.store.Send(p.ctx, p.cfg, fsstore.OutgoingMessage{From: from, To: to, Content: content})
	if err != nil {
		p.t.Fatal(err)
	}
	return msg
}

// serve starts aipm web on the project; it stops when the test ends.
func (p *project) serve() *web.Server {
	p.t.Helper()
	ctx, cancel := context.WithCancel(p.ctx)
	srv, err := web.Start(ctx, p.store, web.Options{})
	if err != nil {
		cancel()
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() {
		cancel()
		if err := srv.Wait(); err != nil {
			p.t.Errorf("server: %v", err)
		}
	})
	return srv
}

// testCtx bounds a test: a hang fails it instead of the whole run (no
// assertion is on time).
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// openBoard opens the server's page in a new tab and waits for its first
// render. Every request the page made is checked, when the test ends, to
// go to the server only.
func openBoard(t *testing.T, ctx context.Context, srv *web.Server) *browser.Tab {
	t.Helper()
	if shared == nil {
		testenv.SkipMissing(t, "chromium (or chromium-browser, google-chrome) on PATH")
	}
	tab, err := shared.NewTab(context.Background()) // closed by the cleanup: open after ctx ends, for a failure's report
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		checkRequests(t, tab, srv)
		tab.Close()
	})
	if err := tab.Navigate(ctx, srv.URL()); err != nil {
		t.Fatal(err)
	}
	if err := tab.WaitReady(ctx, "body[data-event-id]"); err != nil {
		t.Fatal(err)
	}
	return tab
}

// checkRequests fails t if the tab's page asked anything of a host other
// than the server's (a data: URL is no request to a host).
func checkRequests(t *testing.T, tab *browser.Tab, srv *web.Server) {
	t.Helper()
	origin, err := url.Parse(srv.Origin())
	if err != nil {
		t.Fatal(err)
	}
	requests := tab.Requests()
	for _, r := range requests {
		u, err := url.Parse(r)
		if err != nil || (u.Scheme != "data" && u.Host != origin.Host) {
			t.Errorf("the page requested %s: only %s may be asked", r, srv.Origin())
		}
	}
	for _, path := range []string{"/static/app.js", "/static/style.css", "/api/events"} {
		if !slices.ContainsFunc(requests, func(r string) bool { return strings.HasPrefix(r, srv.Origin()+path) }) {
			t.Errorf("the page never requested %s; requests: %q", path, requests)
		}
	}
}

// until waits, in the page, for the JavaScript condition cond to hold
// (checked at each DOM change and every 50 ms).
func until(t *testing.T, ctx context.Context, tab *browser.Tab, cond string) {
	t.Helper()
	js := `new Promise(resolve => {
		const ok = () => { try { return !!(` + cond + `); } catch (e) { return false; } };
		if (ok()) { resolve(true); return; }
		const done = () => { if (ok()) { obs.disconnect(); clearInterval(tick); resolve(true); } };
		const obs = new MutationObserver(done);
		obs.observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
		const tick = setInterval(done, 50);
	})`
	if _, err := browser.Await[bool](ctx, tab, js); err != nil {
		dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		page, derr := browser.Eval[string](dctx, tab, `JSON.stringify({error: document.getElementById("error")?.textContent, eventId: document.body.dataset.eventId, status: document.getElementById("status")?.textContent, to: document.querySelector("#send-form select[name=to]")?.value, content: document.querySelector("#send-form textarea[name=content]")?.value})`)
		t.Fatalf("waiting in the page for %s: %v\npage: %s %v", cond, err, page, derr)
	}
}

func eval[T any](t *testing.T, ctx context.Context, tab *browser.Tab, js string) T {
	t.Helper()
	v, err := browser.Eval[T](ctx, tab, js)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// q quotes s as a JavaScript string (JSON is one).
func q(s string) string { return strconv.Quote(s) }

// attr is a CSS attribute selector for a value without quotes (an id, a
// status).
func attr(name, value string) string { return "[" + name + "='" + value + "']" }

// has is the JavaScript test that sel matches an element.
func has(sel string) string { return "document.querySelector(" + q(sel) + ")" }

// TestBoardColumns: each task's card is in its status's column, a blocked
// card says why.
func TestBoardColumns(t *testing.T) {
	ctx := testCtx(t)
	p := newProject(t, ctx)
	todo := p.task(fsstore.NewTask{Title: "Write the plan", Assignee: "coder"})
	doing := p.task(fsstore.NewTask{Title: "Build the parser", Assignee: "coder", Status: fsstore.StatusInProgress})
	blocked := p.task(fsstore.NewTask{Title: "Ship the release", Assignee: "coder"})
	p.move(blocked.ID, fsstore.TaskChange{Status: fsstore.StatusBlocked, Reason: "waiting for the keys"})
	done := p.task(fsstore.NewTask{Title: "Fix the typo", Assignee: "coder", Status: fsstore.StatusInProgress})
	p.move(done.ID, fsstore.TaskChange{Status: fsstore.StatusDone, Result: "done", Summary: "fixed"})
	cancelled := p.task(fsstore.NewTask{Title: "Port to Plan 9"})
	p.move(cancelled.ID, fsstore.TaskChange{Status: fsstore.StatusCancelled, Reason: "nobody asked"})

	tab := openBoard(t, ctx, p.serve())
	for _, c := range []struct{ id, status, title string }{
		{todo.ID, fsstore.StatusTodo, todo.Title},
		{doing.ID, fsstore.StatusInProgress, doing.Title},
		{blocked.ID, fsstore.StatusBlocked, blocked.Title},
		{done.ID, fsstore.StatusDone, done.Title},
		{cancelled.ID, fsstore.StatusCancelled, cancelled.Title},
	} {
		card := "#board .column" + attr("data-status", c.status) + " .card" + attr("data-task-id", c.id)
		got := eval[string](t, ctx, tab, `(() => { const c = document.querySelector(`+q(card)+`); return c ? c.querySelector(".title").textContent : "(no card)"; })()`)
		if got != c.title {
			t.Errorf("%s in column %s: title %q, want %q", c.id, c.status, got, c.title)
		}
		if n := eval[int](t, ctx, tab, `document.querySelectorAll(`+q(".card"+attr("data-task-id", c.id))+`).length`); n != 1 {
			t.Errorf("%s has %d cards, want 1", c.id, n)
		}
	}
	reason := eval[string](t, ctx, tab, `document.querySelector(`+q(".card"+attr("data-task-id", blocked.ID)+" .reason")+`).textContent`)
	if !strings.Contains(reason, "waiting for the keys") {
		t.Errorf("blocked card's reason %q, want it to say waiting for the keys", reason)
	}
}

// TestSendFromAnotherProcess: a message aipm send appends, in another
// process, appears in the open page without a reload.
func TestSendFromAnotherProcess(t *testing.T) {
	ctx := testCtx(t)
	p := newProject(t, ctx)
	p.send("coder", "lead", "ready for review")
	tab := openBoard(t, ctx, p.serve())
	eval[bool](t, ctx, tab, `window.__sameDocument = true`)
	before := eval[int](t, ctx, tab, `+document.body.dataset.eventId`)

	cmd := exec.CommandContext(ctx, aipmBin, "--dir", p.store.ProjectDir(), "send", "--as", "lead", "--to", "coder", "--json", "please start with the parser")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("aipm send: %v\n%s", err, out)
	}
	var id string
	if i := strings.Index(string(out), `"msg_`); i >= 0 {
		id = strings.SplitN(string(out[i+1:]), `"`, 2)[0]
	}
	if id == "" {
		t.Fatalf("aipm send printed no message id: %s", out)
	}
	msg := "#chats .chat" + attr("data-pair", "coder|lead") + " .msg" + attr("data-msg-id", id)
	until(t, ctx, tab, has(msg))
	if got := eval[string](t, ctx, tab, `document.querySelector(`+q(msg+" .content")+`).textContent`); got != "please start with the parser" {
		t.Errorf("message content %q", got)
	}
	if !eval[bool](t, ctx, tab, `window.__sameDocument === true`) {
		t.Error("the page was reloaded")
	}
	if after := eval[int](t, ctx, tab, `+document.body.dataset.eventId`); after <= before {
		t.Errorf("data-event-id %d after the send, was %d: want it to grow", after, before)
	}

	// what the receiver saw of a message: not seen, then read by the human's inbox
	seen := "#chats .chat" + attr("data-pair", "coder|lead") + " .msg .seen"
	if got := eval[string](t, ctx, tab, `document.querySelector(`+q(seen)+`).textContent`); got != "not seen yet" {
		t.Errorf("a message nobody read: %q", got)
	}
	if out, err := exec.CommandContext(ctx, aipmBin, "--dir", p.store.ProjectDir(), "inbox", "--as", "lead").CombinedOutput(); err != nil {
		t.Fatalf("aipm inbox: %v\n%s", err, out)
	}
	until(t, ctx, tab, `document.querySelector(`+q(seen)+`).textContent.includes("read ") && document.querySelector(`+q(seen)+`).textContent.includes("(aipm inbox)")`)
}

// TestHandEditMovesCard: a task file saved by an editor (a new file
// renamed over it) moves the card to its new column.
func TestHandEditMovesCard(t *testing.T) {
	ctx := testCtx(t)
	p := newProject(t, ctx)
	task := p.task(fsstore.NewTask{Title: "Rename the flag", Assignee: "coder"})
	tab := openBoard(t, ctx, p.serve())
	card := ".card" + attr("data-task-id", task.ID)
	until(t, ctx, tab, has(".column"+attr("data-status", fsstore.StatusTodo)+" "+card))

	if err := fixtures.Of(p.store).HandEdit(fsstore.Tasks, task.ID, func(f map[string]any) { f["status"] = fsstore.StatusCancelled }); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, tab, has(".column"+attr("data-status", fsstore.StatusCancelled)+" "+card))
	if n := eval[int](t, ctx, tab, `document.querySelectorAll(`+q(card)+`).length`); n != 1 {
		t.Errorf("%d cards for the task after the edit, want 1", n)
	}
}

// TestApproveAndReply: the approve button and the send form (opened by a
// chat's reply button) land in the files.
func TestApproveAndReply(t *testing.T) {
	ctx := testCtx(t)
	p := newProject(t, ctx)
	task := p.task(fsstore.NewTask{Title: "Refactor the store", Assignee: "coder", Requester: "coder", NeedsApproval: true})
	asked := p.send("coder", "lead", "may I refactor the store?")
	tab := openBoard(t, ctx, p.serve())

	approval := "#approvals .approval" + attr("data-task-id", task.ID)
	click(t, ctx, tab, approval+" button.approve")
	until(t, ctx, tab, "!"+has(approval))
	got, err := p.store.Task(task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ApprovalStatus != fsstore.ApprovalApproved {
		t.Errorf("after approve, the task file's approvalStatus is %q, want %s", got.ApprovalStatus, fsstore.ApprovalApproved)
	}

	chat := "#chats .chat" + attr("data-pair", "coder|lead")
	until(t, ctx, tab, has(chat+" .msg"+attr("data-msg-id", asked.ID)))
	click(t, ctx, tab, chat+" button.reply")
	if to := eval[string](t, ctx, tab, `document.querySelector("#send-form select[name=to]").value`); to != "coder" {
		t.Errorf("reply set the form's to %q, want coder", to)
	}
	const reply = "yes, go ahead"
	eval[bool](t, ctx, tab, `(document.querySelector("#send-form textarea[name=content]").value = `+q(reply)+`) !== ""`)
	click(t, ctx, tab, `#send-form button[type=submit]`)
	until(t, ctx, tab, `[...document.querySelectorAll(`+q(chat+" .msg .content")+`)].some(e => e.textContent === `+q(reply)+`)`)
	if e := eval[string](t, ctx, tab, `document.getElementById("error").textContent`); e != "" {
		t.Errorf("#error says %q after the send", e)
	}
	unread, _, err := p.store.Unread(ctx, "coder", 100, true)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(unread, func(m fsstore.Message) bool { return m.SenderID == "lead" && m.Content == reply }) {
		t.Errorf("coder's unread messages %+v lack lead's reply %q", unread, reply)
	}
}

// TestMessageIsText: markup in a message is shown as its text; none of it
// runs or loads.
func TestMessageIsText(t *testing.T) {
	ctx := testCtx(t)
	p := newProject(t, ctx)
	const raw = `<script>window.__xss = 1</script><img src="/x.png" onerror="window.__xss = 2"><b>bold</b>`
	msg := p.send("coder", "lead", raw)
	tab := openBoard(t, ctx, p.serve())
	content := ".msg" + attr("data-msg-id", msg.ID) + " .content"
	until(t, ctx, tab, has(content))
	if got := eval[string](t, ctx, tab, `document.querySelector(`+q(content)+`).textContent`); got != raw {
		t.Errorf(".content text %q, want the raw message %q", got, raw)
	}
	if n := eval[int](t, ctx, tab, `document.querySelector(`+q(content)+`).children.length`); n != 0 {
		t.Errorf(".content has %d child elements, want none (text only)", n)
	}
	if eval[bool](t, ctx, tab, `window.__xss !== undefined`) {
		t.Error("the message's script ran (window.__xss is set)")
	}
	for _, r := range tab.Requests() {
		if strings.Contains(r, "/x.png") {
			t.Errorf("the message's image was requested: %s", r)
		}
	}
}

// click clicks the element sel names through its own click(), as a user's
// click does for the page's handlers; a mouse event at coordinates could
// land on whatever a re-render (an SSE update) moved there.
func click(t *testing.T, ctx context.Context, tab *browser.Tab, sel string) {
	t.Helper()
	if !eval[bool](t, ctx, tab, `(() => { const e = document.querySelector(`+q(sel)+`); if (!e) return false; e.click(); return true })()`) {
		t.Fatalf("no element %s to click", sel)
	}
}

// TestLeasesLive: a lease taken while the page is open appears with its
// holder, paths, kind, reason and task; its reason is text, never markup;
// a release removes it without a reload; the break button ends a lease
// and its holder is told the reason typed.
func TestLeasesLive(t *testing.T) {
	ctx := testCtx(t)
	p := newProject(t, ctx)
	task := p.task(fsstore.NewTask{Title: "Rewrite the parser", Assignee: "coder"})
	tab := openBoard(t, ctx, p.serve())
	eval[bool](t, ctx, tab, `window.__sameDocument = true`)
	until(t, ctx, tab, `document.querySelector("#leases .empty")`)

	const hostile = `<img src="/x.png" onerror="window.__xss = 3"><b>mine</b>`
	coder := p.lease("coder", fsstore.LeaseRequest{Paths: []string{"src/parser", "go.mod"}, Reason: hostile, TaskID: task.ID})
	reviewer := p.lease("reviewer", fsstore.LeaseRequest{Paths: []string{"docs/*.md"}, Shared: true, Reason: "proofreading"})
	until(t, ctx, tab, has(leaseItem(coder))+" && "+has(leaseItem(reviewer)))
	for _, want := range []leaseShown{
		{Lease: coder, Holder: "coder", Kind: "exclusive", Paths: []string{"src/parser", "go.mod"}, Reason: hostile, Task: "task " + task.Title},
		{Lease: reviewer, Holder: "reviewer", Kind: "shared", Paths: []string{"docs/*.md"}, Reason: "proofreading"},
	} {
		checkLeaseShown(t, ctx, tab, want)
	}
	checkInert(t, ctx, tab)

	// released elsewhere (the file changes): gone without a reload
	if _, err := p.store.ReleaseLeases(ctx, "reviewer", nil); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, tab, "!"+has(leaseItem(reviewer))+" && "+has(leaseItem(coder)))

	// broken from the page: the holder is told the reason typed
	breakFromPage(t, ctx, tab, coder, "taking over")
	until(t, ctx, tab, "!"+has(leaseItem(coder))+` && document.querySelector("#leases .empty")`)
	if e := eval[string](t, ctx, tab, `document.getElementById("error").textContent`); e != "" {
		t.Errorf("#error says %q after the break", e)
	}
	if ls, err := p.store.Leases(); err != nil || len(ls) != 0 {
		t.Errorf("leases after the break: %+v, %v; want none", ls, err)
	}
	notes, _ := p.store.NotificationsPath("coder")
	if recs, _, _, _ := fsstore.ReadAll(notes); len(recs) != 1 || !strings.Contains(string(recs[0].Data), "taking over") {
		t.Errorf("coder's notifications: %d, want one with the break's reason", len(recs))
	}
	if !eval[bool](t, ctx, tab, `window.__sameDocument === true`) {
		t.Error("the page was reloaded")
	}
}

// lease takes a lease for holder.
func (p *project) lease(holder string, req fsstore.LeaseRequest) fsstore.Lease {
	p.t.Helper()
	req.Holder = holder
	l, err := p.store.TakeLease(p.ctx, p.cfg, req)
	if err != nil {
		p.t.Fatal(err)
	}
	return l
}

// leaseItem is the selector of l's item in the page's list of leases.
func leaseItem(l fsstore.Lease) string { return "#leases .lease" + attr("data-lease-id", l.ID) }

// leaseShown is what the page shows of a lease (Lease aside).
type leaseShown struct {
	Lease                              fsstore.Lease `json:"-"`
	Holder, Kind, Reason, Task, Expiry string
	Paths                              []string
	ReasonKids                         int
}

// checkLeaseShown fails t unless the page shows want.Lease as want says:
// its reason as text (no element in it), its end to come.
func checkLeaseShown(t *testing.T, ctx context.Context, tab *browser.Tab, want leaseShown) {
	t.Helper()
	js := `(() => { const e = document.querySelector(` + q(leaseItem(want.Lease)) + `); return JSON.stringify({
		holder: e.querySelector(".name").textContent,
		kind: e.querySelector(".pill").textContent,
		paths: [...e.querySelectorAll(".path")].map(p => p.textContent),
		reason: e.querySelector(".why")?.textContent,
		reasonKids: e.querySelector(".why")?.children.length,
		task: e.querySelector(".task")?.textContent,
		expiry: e.querySelector(".expiry").textContent,
	}) })()`
	var got leaseShown
	if err := json.Unmarshal([]byte(eval[string](t, ctx, tab, js)), &got); err != nil {
		t.Fatal(err)
	}
	if got.Holder != want.Holder || got.Kind != want.Kind || !slices.Equal(got.Paths, want.Paths) || got.Reason != want.Reason || got.ReasonKids != 0 || got.Task != want.Task || !strings.HasPrefix(got.Expiry, "ends in ") {
		t.Errorf("%s's lease shows %+v; want holder %s, %s, paths %q, reason %q as text, %q, ends in", want.Holder, got, want.Holder, want.Kind, want.Paths, want.Reason, want.Task)
	}
}

// checkInert fails t if a lease reason's markup ran or asked for its
// image.
func checkInert(t *testing.T, ctx context.Context, tab *browser.Tab) {
	t.Helper()
	if eval[bool](t, ctx, tab, `window.__xss !== undefined`) {
		t.Error("the lease reason's markup ran (window.__xss is set)")
	}
	for _, r := range tab.Requests() {
		if strings.Contains(r, "/x.png") {
			t.Errorf("the lease reason's image was requested: %s", r)
		}
	}
}

// breakFromPage types reason beside l in the page, clicks its Break
// button and waits for the server's answer to that action (the page shows
// the lease gone as soon as leases.json changes, before the break has told
// the holder): it fails t unless the answer is a success naming l.
func breakFromPage(t *testing.T, ctx context.Context, tab *browser.Tab, l fsstore.Lease, reason string) {
	t.Helper()
	const path = "/api/leases/break"
	recordAnswers(t, ctx, tab, path)
	eval[bool](t, ctx, tab, `(document.querySelector(`+q(leaseItem(l)+" input.reason")+`).value = `+q(reason)+`) !== ""`)
	click(t, ctx, tab, leaseItem(l)+" button.break")
	until(t, ctx, tab, `window.__answers[`+q(path)+`].length > 0`)
	var answers []struct {
		Status int
		Body   string
	}
	if err := json.Unmarshal([]byte(eval[string](t, ctx, tab, `JSON.stringify(window.__answers[`+q(path)+`])`)), &answers); err != nil {
		t.Fatal(err)
	}
	if len(answers) != 1 || answers[0].Status != 200 || !strings.Contains(answers[0].Body, l.ID) {
		t.Fatalf("the page's break of %s was answered %+v; want one 200 naming it", l.ID, answers)
	}
}

// recordAnswers makes the page keep the answer (status and body) of each
// of its requests to path in window.__answers[path], in order: what a test
// waits on when an action's effect is not all on the page.
func recordAnswers(t *testing.T, ctx context.Context, tab *browser.Tab, path string) {
	t.Helper()
	eval[bool](t, ctx, tab, `(() => {
		const path = `+q(path)+`, answers = (window.__answers ||= {});
		answers[path] = [];
		const fetch = window.fetch.bind(window);
		window.fetch = async (url, ...rest) => {
			const r = await fetch(url, ...rest);
			if (String(url) === path) answers[path].push({status: r.status, body: await r.clone().text()});
			return r;
		};
		return true;
	})()`)
}
