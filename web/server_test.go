package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"regexp"
	"strings"
	"testing"
	"time"

	"aipm/fsstore"
	"aipm/web"
)

// newBoard starts aipm web on a small project: a human, an AI agent, a task.
func newBoard(t *testing.T) (*web.Server, *fsstore.Store, fsstore.Task) {
	t.Helper()
	store, err := fsstore.Init(t.TempDir(), "board")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
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
	task, err := store.CreateTask(ctx, cfg, fsstore.NewTask{Title: "Fix login", Assignee: "coder", Requester: "lead", Status: fsstore.StatusInProgress})
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	srv, err := web.Start(sctx, store, web.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		srv.Wait()
	})
	return srv, store, task
}

// visitor is a browser that opened the printed URL: it holds the cookie
// and the page's CSRF token.
type visitor struct {
	c    *http.Client
	srv  *web.Server
	csrf string
}

var csrfMeta = regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)">`)

func visit(t *testing.T, srv *web.Server) *visitor {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.Get(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Request.URL.RawQuery != "" {
		t.Fatalf("first visit: %d at %s", resp.StatusCode, resp.Request.URL)
	}
	m := csrfMeta.FindSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token in the page:\n%s", page)
	}
	return &visitor{c: c, srv: srv, csrf: string(m[1])}
}

func (v *visitor) post(t *testing.T, path, body string, header map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", v.srv.Origin()+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", v.srv.Origin())
	req.Header.Set("X-CSRF-Token", v.csrf)
	for k, val := range header {
		if val == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, val)
		}
	}
	resp, err := v.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// Every request needs the token; Host and Origin must name the server; a
// POST needs the page's CSRF token; a refused request changes nothing.
func TestBoardRefusesStrangers(t *testing.T) {
	srv, store, _ := newBoard(t)
	v := visit(t, srv)
	before := chatLines(t, store)
	get := func(c *http.Client, url string, header map[string]string) int {
		req, _ := http.NewRequest("GET", url, nil)
		for k, val := range header {
			if k == "Host" {
				req.Host = val
			} else {
				req.Header.Set(k, val)
			}
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		name string
		code int
		got  int
	}{
		{"no token", 401, get(http.DefaultClient, srv.Origin()+"/api/state", nil)},
		{"no token, the page", 401, get(http.DefaultClient, srv.Origin()+"/", nil)},
		{"a wrong token", 401, get(http.DefaultClient, srv.Origin()+"/?token=nope", nil)},
		{"the token", 200, get(v.c, srv.Origin()+"/api/state", nil)},
		{"a rebinding Host", 403, get(v.c, srv.Origin()+"/api/state", map[string]string{"Host": "evil.example:80"})},
		{"a foreign Origin on the stream", 403, get(v.c, srv.Origin()+"/api/events", map[string]string{"Origin": "http://evil.example"})},
	} {
		if c.got != c.code {
			t.Errorf("%s: %d, want %d", c.name, c.got, c.code)
		}
	}
	send := `{"to":"coder","content":"hi"}`
	if code, body := v.post(t, "/api/send", send, map[string]string{"X-CSRF-Token": ""}); code != 403 || !strings.Contains(body, "CSRF") {
		t.Errorf("POST without the CSRF token: %d %s", code, body)
	}
	if code, body := v.post(t, "/api/send", send, map[string]string{"X-CSRF-Token": "forged"}); code != 403 {
		t.Errorf("POST with a forged CSRF token: %d %s", code, body)
	}
	if code, body := v.post(t, "/api/send", send, map[string]string{"Origin": "http://evil.example"}); code != 403 {
		t.Errorf("POST from a foreign Origin: %d %s", code, body)
	}
	if code, body := v.post(t, "/api/send", `{"to":"coder","content":"hi","as":"coder"}`, nil); code != 400 || !strings.Contains(body, "not a human") {
		t.Errorf("POST as an AI agent: %d %s", code, body)
	}
	if code, body := v.post(t, "/api/send", `{"to":"coder","text":"hi"}`, nil); code != 400 {
		t.Errorf("POST with an unknown field: %d %s", code, body)
	}
	if after := chatLines(t, store); after != before {
		t.Errorf("refused requests wrote %d chat lines", after-before)
	}
	resp, err := v.c.Get(srv.Origin() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
}

// A non-loopback address needs AllowRemote, and the refusal says why.
func TestBoardLoopbackOnly(t *testing.T) {
	store, err := fsstore.Init(t.TempDir(), "p")
	if err != nil {
		t.Fatal(err)
	}
	_, err = web.Start(context.Background(), store, web.Options{Addr: "0.0.0.0:0"})
	if err == nil || !strings.Contains(err.Error(), "--allow-remote") {
		t.Fatalf("0.0.0.0 without AllowRemote: %v", err)
	}
}

func chatLines(t *testing.T, store *fsstore.Store) int {
	path, _ := store.ChatPath("coder")
	recs, _, _, err := fsstore.ReadAll(path)
	if err != nil {
		t.Fatal(err)
	}
	return len(recs)
}

// The actions go through the CLI's rules and land in the files; the event
// stream carries each change, and a reconnect gets the whole state.
func TestBoardActionsAndStream(t *testing.T) {
	srv, store, task := newBoard(t)
	v := visit(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.Origin()+"/api/events", nil)
	resp, err := v.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := readEvents(resp.Body)
	first := <-events
	if !strings.Contains(first.data, `"title":"Fix login"`) {
		t.Fatalf("first event lacks the task: %.300s", first.data)
	}

	// blocked needs a reason, as in the CLI; with one the assignee is interrupted
	if code, body := v.post(t, "/api/tasks/status", `{"taskId":"`+task.ID+`","status":"blocked"}`, nil); code != 400 || !strings.Contains(body, "reason") {
		t.Fatalf("blocked without a reason: %d %s", code, body)
	}
	if code, body := v.post(t, "/api/tasks/status", `{"taskId":"`+task.ID+`","status":"blocked","reason":"API changes"}`, nil); code != 200 {
		t.Fatalf("blocked with a reason: %d %s", code, body)
	}
	if got, _ := store.Task(task.ID); got.Status != fsstore.StatusBlocked || got.StatusChangedBy != "lead" {
		t.Fatalf("task after the page blocked it: %s by %s", got.Status, got.StatusChangedBy)
	}
	notes, _ := store.NotificationsPath("coder")
	if recs, _, _, _ := fsstore.ReadAll(notes); len(recs) != 1 || !strings.Contains(string(recs[0].Data), `"type":"interrupt"`) {
		t.Fatalf("the assignee was not interrupted: %d notifications", len(recs))
	}
	waitEvent(t, events, `"blockedReason":"API changes"`)

	// a message from another writer (the CLI, an agent) reaches the stream
	cfg, _ := store.LoadConfig()
	if _, err := store.Send(context.Background(), cfg, fsstore.OutgoingMessage{From: "coder", To: "lead", Content: "<script>window.__xss=1</script>"}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, events, `\u003cscript\u003ewindow.__xss=1\u003c/script\u003e`)

	// send and create a task from the page
	if code, body := v.post(t, "/api/send", `{"to":"coder","content":"on it"}`, nil); code != 200 || !strings.Contains(body, `"id":"msg_`) {
		t.Fatalf("send: %d %s", code, body)
	}
	if code, body := v.post(t, "/api/tasks", `{"title":"Write docs","assignee":"coder","priority":"high"}`, nil); code != 200 {
		t.Fatalf("create: %d %s", code, body)
	}
	waitEvent(t, events, `"title":"Write docs"`)

	// a reconnect (Last-Event-ID) gets the whole current state at once
	req2, _ := http.NewRequestWithContext(ctx, "GET", srv.Origin()+"/api/events", nil)
	req2.Header.Set("Last-Event-ID", first.id)
	resp2, err := v.c.Do(req2)
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	again := <-readEvents(resp2.Body)
	for _, want := range []string{`"title":"Write docs"`, `"content":"on it"`, `"blockedReason":"API changes"`} {
		if !strings.Contains(again.data, want) {
			t.Errorf("reconnected state lacks %s", want)
		}
	}
}

type event struct{ id, data string }

func readEvents(r io.Reader) <-chan event {
	out := make(chan event, 64)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		var e event
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				e.id = line[4:]
			case strings.HasPrefix(line, "data: "):
				e.data = line[6:]
			case line == "" && e.data != "":
				out <- e
				e = event{}
			}
		}
	}()
	return out
}

// waitEvent waits for an event whose data holds want (bounded generously;
// never a timing assertion).
func waitEvent(t *testing.T, events <-chan event, want string) event {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatalf("stream ended before an event with %s", want)
			}
			if strings.Contains(e.data, want) {
				var st web.State
				if err := json.Unmarshal([]byte(e.data), &st); err != nil {
					t.Fatalf("event is not a State: %v", err)
				}
				return e
			}
		case <-deadline:
			t.Fatalf("no event with %s", want)
		}
	}
}

// An empty project's lists are [], never null: the page iterates them.
func TestEmptyProjectState(t *testing.T) {
	store, err := fsstore.Init(t.TempDir(), "empty")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := web.Start(ctx, store, web.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); srv.Wait() }()
	v := visit(t, srv)
	resp, err := v.c.Get(srv.Origin() + "/api/state")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"agents", "humans", "tasks", "chats", "conversations", "delegations", "approvals", "triggers", "timeline", "leases", "cycles"} {
		if _, ok := st[key].([]any); !ok {
			t.Errorf("%s is %v, want a list", key, st[key])
		}
	}
}

// The review's findings, each a test: a page opened at localhost can act;
// a rejection from the page tells the agent not to start (as aipm task
// reject does); a status needs a status, and a reason goes with blocked or
// cancelled only; trailing garbage after the JSON is refused.
func TestBoardActsLikeTheCLI(t *testing.T) {
	srv, store, _ := newBoard(t)
	v := visit(t, srv)
	ctx := context.Background()
	cfg, _ := store.LoadConfig()
	asked, err := store.CreateTask(ctx, cfg, fsstore.NewTask{Title: "Refactor", Assignee: "coder", Requester: "coder", NeedsApproval: true})
	if err != nil {
		t.Fatal(err)
	}
	local := strings.Replace(srv.Origin(), "127.0.0.1", "localhost", 1)
	req, _ := http.NewRequest("POST", local+"/api/tasks/decision", strings.NewReader(`{"taskId":"`+asked.ID+`","approval":"rejected","reason":"not now"}`))
	req.Header.Set("Origin", local)
	req.Header.Set("X-CSRF-Token", v.csrf)
	req.AddCookie(&http.Cookie{Name: "aipm_token_" + srv.Origin()[strings.LastIndex(srv.Origin(), ":")+1:], Value: srv.Token()})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("reject from a page at localhost: %d %s", resp.StatusCode, body)
	}
	notes, _ := store.NotificationsPath("coder")
	recs, _, _, _ := fsstore.ReadAll(notes)
	if len(recs) != 1 || !strings.Contains(string(recs[0].Data), "Do not start it") {
		t.Fatalf("coder was not told of the rejection: %d notifications", len(recs))
	}
	for _, c := range []struct{ body, want string }{
		{`{"taskId":"` + asked.ID + `","status":""}`, "status"},
		{`{"taskId":"` + asked.ID + `","status":"done","reason":"why"}`, "reason goes with blocked or cancelled"},
		{`{"taskId":"` + asked.ID + `","approval":""}`, "approval"},
		{`{"to":"coder","content":"x"} {"more":1}`, "more than one JSON value"},
	} {
		path := "/api/tasks/status"
		if strings.Contains(c.body, "approval") {
			path = "/api/tasks/decision"
		} else if strings.Contains(c.body, "content") {
			path = "/api/send"
		}
		if code, body := v.post(t, path, c.body, nil); code != 400 || !strings.Contains(body, c.want) {
			t.Errorf("%s %s: %d %s; want 400 saying %q", path, c.body, code, body, c.want)
		}
	}
}

// TestGroupMessageIsOneChat: a message to several agents is one chat of
// all its parties, shown once, with what each receiver saw of it.
func TestGroupMessageIsOneChat(t *testing.T) {
	store, err := fsstore.Init(t.TempDir(), "group")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, a := range []fsstore.NewAgent{{ID: "lead", Type: fsstore.AgentHuman}, {ID: "a1", Type: fsstore.AgentAI}, {ID: "a2", Type: fsstore.AgentAI}} {
		if _, err := store.AddAgent(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := store.LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	msg, err := store.Send(ctx, cfg, fsstore.OutgoingMessage{From: "lead", Receivers: []string{"a1", "a2"}, Content: "standup"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.Unread(ctx, "a1", 10, false); err != nil { // a1 reads it
		t.Fatal(err)
	}
	srv, err := web.Start(ctx, store, web.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); srv.Wait() }()
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
	if len(st.Chats) != 1 || strings.Join(st.Chats[0].Agents, "|") != "a1|a2|lead" || len(st.Chats[0].Messages) != 1 {
		t.Fatalf("chats: %+v; want one chat of a1, a2 and lead holding the message once", st.Chats)
	}
	m := st.Chats[0].Messages[0]
	if m.ID != msg.ID || m.SeenBy["a1"].ReadAt.IsZero() || !m.SeenBy["a2"].ReadAt.IsZero() {
		t.Errorf("the message as shown: %+v; want read by a1, not by a2", m)
	}
}
