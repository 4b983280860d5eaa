package web_test

import (
	"os"
	"path/filepath"
	"testing"

	"aipm/fsstore"
)

// TestBoardScreenshot renders the board of a project like aipm demo's
// (ten tasks in every status, four agents, chats, a conversation, a
// delegation, an approval, two leases); with UPDATE_SCREENSHOT=1 it writes it, at
// 1400x1000, to docs/board.png.
func TestBoardScreenshot(t *testing.T) {
	ctx := testCtx(t)
	p := newNamedProject(t, ctx, "demo")
	if _, err := p.store.AddAgent(ctx, fsstore.NewAgent{ID: "tester", Type: fsstore.AgentAI, Parent: "lead"}); err != nil {
		t.Fatal(err)
	}
	var err error
	if p.cfg, err = p.store.LoadConfig(); err != nil {
		t.Fatal(err)
	}
	start := fsstore.TaskChange{Status: fsstore.StatusInProgress}
	p.task(fsstore.NewTask{Title: "Write the release notes", Assignee: "coder", Priority: "high"})
	p.task(fsstore.NewTask{Title: "Add a --json flag to aipm status", Assignee: "tester"})
	p.task(fsstore.NewTask{Title: "Document the web board", Priority: "low"})
	parser := p.task(fsstore.NewTask{Title: "Parse the config's new [web] table", Assignee: "coder", Status: fsstore.StatusInProgress, Priority: "urgent"})
	p.task(fsstore.NewTask{Title: "Review the SSE reconnect logic", Assignee: "reviewer", Status: fsstore.StatusInProgress})
	blocked := p.task(fsstore.NewTask{Title: "Sign the release", Assignee: "coder"})
	p.move(blocked.ID, fsstore.TaskChange{Status: fsstore.StatusBlocked, Reason: "waiting for the signing key from ops"})
	for _, title := range []string{"Fix the flaky watcher test", "Rename sessions/by-agent"} {
		d := p.task(fsstore.NewTask{Title: title, Assignee: "coder"})
		p.move(d.ID, start, fsstore.TaskChange{Status: fsstore.StatusDone, Result: "done", Summary: "merged"})
	}
	c := p.task(fsstore.NewTask{Title: "Port the hook to Windows", Priority: "low"})
	p.move(c.ID, fsstore.TaskChange{Status: fsstore.StatusCancelled, Reason: "not this release"})
	p.task(fsstore.NewTask{Title: "Cache the task index in memory", Assignee: "coder", Requester: "coder", NeedsApproval: true})

	p.send("lead", "coder", "The [web] table: port and allow_remote. Tests first, please.")
	p.send("coder", "lead", "On it. I will ask reviewer to look at the parser once it passes.")
	p.send("lead", "reviewer", "Please look at the SSE reconnect: a lost event must never be lost for good.")
	p.send("reviewer", "lead", "Reading it now; the Last-Event-ID path looks right so far.")
	p.send("tester", "lead", "The --json flag: should it print the agents too?")
	if _, err := p.store.Delegations().Create(ctx, p.cfg, fsstore.NewDelegation{Agent: "coder", TaskID: parser.ID, Target: "reviewer", Purpose: "review the parser of the [web] table"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.store.Conversations().Start(ctx, p.cfg, fsstore.NewConversation{From: "tester", To: "reviewer", Purpose: "agree on the test cases of the web board", InitialMessage: "Which states should the board tests cover?"}); err != nil {
		t.Fatal(err)
	}

	for _, l := range []fsstore.LeaseRequest{
		{Holder: "coder", Paths: []string{"internal/config/*.go"}, Reason: "the [web] table's parser", TaskID: parser.ID},
		{Holder: "reviewer", Paths: []string{"web/server.go"}, Shared: true, Reason: "reading the SSE reconnect"},
	} {
		if _, err := p.store.TakeLease(ctx, p.cfg, l); err != nil {
			t.Fatal(err)
		}
	}

	tab := openBoard(t, ctx, p.serve())
	until(t, ctx, tab, `document.querySelectorAll("#board .card").length === 10 && document.querySelector("#approvals .approval") && document.querySelector("#conversations .conversation") && document.querySelector("#delegations .delegation") && document.querySelectorAll("#leases .lease").length === 2`)
	png, err := tab.Screenshot(ctx, 1400, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(png) < 8 || string(png[1:4]) != "PNG" {
		t.Fatalf("the screenshot is no PNG (%d bytes)", len(png))
	}
	if os.Getenv("UPDATE_SCREENSHOT") != "1" {
		return
	}
	path := filepath.Join("..", "docs", "board.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes)", path, len(png))
}
