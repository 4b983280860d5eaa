package mcpserver_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// unassignedTask creates a todo task nobody is assigned, waiting for
// blockers: ready to claim when they are done.
func (p *project) unassignedTask(title, priority string, blockers ...string) fsstore.Task {
	p.t.Helper()
	t, err := p.store.CreateTask(context.Background(), p.cfg, fsstore.NewTask{Title: title, Priority: priority, Requester: "lead", Status: fsstore.StatusTodo, BlockedBy: blockers})
	if err != nil {
		p.t.Fatal(err)
	}
	return t
}

// makeTasksDir makes the project's tasks directory, which a refused write
// of a task leaves behind, empty, when it was not there: p.tree then
// compares what the refusal changed of the documents only.
func (p *project) makeTasksDir() {
	p.t.Helper()
	path, err := p.store.DocPath(fsstore.Tasks, absentTask)
	if err == nil {
		err = os.MkdirAll(filepath.Dir(path), 0o755)
	}
	if err != nil {
		p.t.Fatal(err)
	}
}

// claimCase is one claim_task call of coder's, on a project setup made.
type claimCase struct {
	name    string
	purpose string // of coder's session: chat unless task
	// setup makes the tasks and returns the task_id to pass ("" for none)
	// and the id the claim must get ("" for a refusal).
	setup func(p *project, cs *mcp.ClientSession, token string) (arg, want string)
	code  string // "" for success
	says  string // in the instruction or the refusal
}

var claimCases = []claimCase{
	{name: "by id", setup: func(p *project, _ *mcp.ClientSession, _ string) (string, string) {
		id := p.unassignedTask("write the parser", "").ID
		return id, id
	}, says: "get_next_action"},
	{name: "without id: the most urgent", setup: func(p *project, _ *mcp.ClientSession, _ string) (string, string) {
		p.unassignedTask("later", "low")
		urgent := p.unassignedTask("now", "urgent")
		p.unassignedTask("soon", "normal")
		return "", urgent.ID
	}, says: "in progress"},
	{name: "from a task session with nothing in progress", purpose: "task", setup: func(p *project, cs *mcp.ClientSession, token string) (string, string) {
		blockOwnTask(p, cs, token)
		id := p.unassignedTask("next", "").ID
		return id, id
	}, says: "call logout, then exit"},
	{name: "taken", setup: func(p *project, _ *mcp.ClientSession, _ string) (string, string) {
		t, err := p.store.CreateTask(context.Background(), p.cfg, fsstore.NewTask{Title: "reviewer's", Assignee: "reviewer", Requester: "lead"})
		if err != nil {
			p.t.Fatal(err)
		}
		return t.ID, ""
	}, code: "task_taken", says: "reviewer"},
	{name: "waiting for a blocker", setup: func(p *project, _ *mcp.ClientSession, _ string) (string, string) {
		first := p.unassignedTask("first", "")
		return p.unassignedTask("second", "", first.ID).ID, ""
	}, code: "task_not_ready", says: "(todo)"},
	{name: "backlog", setup: func(p *project, _ *mcp.ClientSession, _ string) (string, string) {
		t, err := p.store.CreateTask(context.Background(), p.cfg, fsstore.NewTask{Title: "someday", Requester: "lead", Status: fsstore.StatusBacklog})
		if err != nil {
			p.t.Fatal(err)
		}
		return t.ID, ""
	}, code: "task_not_ready", says: "backlog"},
	{name: "nothing to claim", setup: func(*project, *mcp.ClientSession, string) (string, string) { return "", "" }, code: "nothing_to_claim", says: "get_next_action"},
	{name: "a task in progress already", setup: func(p *project, _ *mcp.ClientSession, _ string) (string, string) {
		p.taskInProgress("coder", "current work")
		return p.unassignedTask("more", "").ID, ""
	}, code: "invalid_transition", says: "report_completed"},
	{name: "no such task", setup: func(*project, *mcp.ClientSession, string) (string, string) {
		return "tsk_01M7YZWACRA0328GMTHNDHB18Z", ""
	}, code: "task_not_found", says: "tsk_01M7YZWACRA0328GMTHNDHB18Z"},
	{name: "not a task id", setup: func(*project, *mcp.ClientSession, string) (string, string) { return "dlg_1", "" }, code: "invalid_task_id"},
}

// TestClaimTask: claim_task through aipm serve at each protocol revision
// the real clients speak: a claim by id and without one (the most urgent),
// from a chat session and from a task session, each told what comes next;
// each refusal with its code and what to do, changing nothing.
func TestClaimTask(t *testing.T) {
	for _, rev := range revisions {
		for _, tc := range claimCases {
			t.Run(rev+"/"+tc.name, func(t *testing.T) { tc.run(t, rev) })
		}
	}
}

// run plays the case on a new project, at protocol revision rev.
func (tc claimCase) run(t *testing.T, rev string) {
	p := newProject(t)
	purpose := "chat"
	if tc.purpose != "" {
		purpose = tc.purpose
		p.taskInProgress("coder", "the session's task")
	}
	cs := p.connect(rev)
	token := p.authenticate(cs, "coder", purpose)
	arg, want := tc.setup(p, cs, token)
	args := map[string]any{"session_token": token}
	if arg != "" {
		args["task_id"] = arg
	}
	p.makeTasksDir()
	before := p.tree()
	r := call(t, cs, "claim_task", args)
	if r.code() != tc.code || !strings.Contains(r.text, tc.says) {
		t.Fatalf("claim_task(%v): %s; want code %q saying %q", args, r.text, tc.code, tc.says)
	}
	if tc.code != "" {
		if p.tree() != before {
			t.Fatal("a refused claim changed .ai-pm")
		}
		return
	}
	task, _ := r.data["task"].(map[string]any)
	got, err := p.store.Task(want)
	if err != nil || task["id"] != want || got.Assignee != "coder" || got.Status != fsstore.StatusInProgress || got.StatusChangedBy != "coder" {
		t.Fatalf("claimed %v; the task is %+v (%v), want %s in progress for coder", task["id"], got, err, want)
	}
}

// blockOwnTask: coder's task session blocks its own task, so that the
// session lives on with no task in progress.
func blockOwnTask(p *project, cs *mcp.ClientSession, token string) {
	p.t.Helper()
	if r := call(p.t, cs, "update_task_status", map[string]any{"session_token": token, "status": "blocked", "reason": "waiting for a review"}); r.isError {
		p.t.Fatalf("update_task_status: %s", r.text)
	}
}

// Two agents' sessions, each through its own aipm serve, claim the same
// ready task at once: exactly one gets it, the other is told it is taken.
// CLAIM_RACES=N runs N rounds at each protocol revision (default 5).
func TestClaimRaceProcesses(t *testing.T) {
	rounds := envInt("CLAIM_RACES", 5)
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) {
			p := newProject(t)
			sessions := map[string]*mcp.ClientSession{"coder": p.connect(rev), "reviewer": p.connect(rev)}
			tokens := map[string]string{}
			for agent, cs := range sessions {
				tokens[agent] = p.authenticate(cs, agent, "chat")
			}
			for i := range rounds {
				task := p.unassignedTask(fmt.Sprintf("round %d", i), "")
				winner := claimRace(t, sessions, tokens, task.ID)
				got, _ := p.store.Task(task.ID)
				if got.Assignee != winner || got.Status != fsstore.StatusInProgress {
					t.Fatalf("round %d: %s won, the task is %+v", i, winner, got)
				}
				// The winner finishes, so that it may claim again.
				if _, err := p.store.UpdateTask(context.Background(), p.cfg, task.ID, winner, fsstore.TaskChange{Status: fsstore.StatusDone}); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// claimRace has every session claim task id at once and returns the one
// agent that got it; the others must be refused with task_taken.
func claimRace(t *testing.T, sessions map[string]*mcp.ClientSession, tokens map[string]string, id string) string {
	t.Helper()
	type claimed struct {
		agent string
		r     result
		err   error
	}
	start := make(chan struct{})
	results := make(chan claimed, len(sessions))
	for agent, cs := range sessions {
		go func() {
			<-start
			r, err := tryCall(cs, "claim_task", map[string]any{"session_token": tokens[agent], "task_id": id})
			results <- claimed{agent, r, err}
		}()
	}
	close(start)
	winner := ""
	for range sessions {
		c := <-results
		switch {
		case c.err != nil:
			t.Fatal(c.err)
		case c.r.code() == "" && winner == "":
			winner = c.agent
		case c.r.code() != "task_taken":
			t.Fatalf("%s's claim of %s: %s (%s won already)", c.agent, id, c.r.text, winner)
		}
	}
	if winner == "" {
		t.Fatalf("nobody claimed %s", id)
	}
	return winner
}

// TestNextActionOffersClaim: an idle chat session is offered the ready task
// nobody has in the queue of its group, naming the exact claim_task call
// (a task of no group is offered to none); once claimed, it is offered
// nothing more (its task session takes the task).
func TestNextActionOffersClaim(t *testing.T) {
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) {
			p := newProject(t)
			p.withTester() // the group team holds coder
			cs := p.connect(rev)
			token := p.authenticate(cs, "coder", "chat")
			p.unassignedTask("ready for anyone", "urgent")
			if r := call(t, cs, "get_next_action", map[string]any{"session_token": token, "wait_seconds": 1}); r.str("action") == "claim_task" {
				t.Fatalf("offered a task of no group: %s", r.text)
			}
			task, err := p.store.CreateTask(context.Background(), p.cfg, fsstore.NewTask{Title: "for the team", Priority: "high", Requester: "lead", Group: "team"})
			if err != nil {
				t.Fatal(err)
			}
			r := call(t, cs, "get_next_action", map[string]any{"session_token": token, "wait_seconds": 1})
			offered, _ := r.data["task"].(map[string]any)
			tools, _ := r.data["tools"].([]any)
			if r.str("action") != "claim_task" || offered["id"] != task.ID || len(tools) == 0 || tools[0] != "claim_task" ||
				!strings.Contains(r.str("instruction"), fmt.Sprintf("claim_task(task_id=%q)", task.ID)) {
				t.Fatalf("idle chat session with a claimable task: %s", r.text)
			}
			if r := call(t, cs, "claim_task", map[string]any{"session_token": token, "task_id": task.ID}); r.isError {
				t.Fatalf("claim_task: %s", r.text)
			}
			if r := call(t, cs, "get_next_action", map[string]any{"session_token": token, "wait_seconds": 1}); r.str("action") == "claim_task" {
				t.Fatalf("offered a claim with a task in progress: %s", r.text)
			}
		})
	}
}
