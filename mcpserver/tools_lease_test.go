package mcpserver_test

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"aipm/hook"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The lease tool (DESIGN section 18) through aipm serve at each protocol
// revision the real clients speak: take, a conflict naming the holder, a
// shared lease beside a shared one, renew by taking again, the task's
// leases on get_task, release, refusals that change nothing, and a
// session's end ending its leases unless kept.
func TestLeaseTool(t *testing.T) {
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) { checkLeaseToolAt(t, rev) })
	}
}

// leaseSessions are the two sessions TestLeaseTool leases through: the
// coder's, for its task in progress, and the reviewer's, for chat.
type leaseSessions struct {
	p                         *project
	coder, reviewer           *mcp.ClientSession
	coderToken, reviewerToken string // their session tokens
}

// checkLeaseToolAt plays TestLeaseTool's story at protocol revision rev.
func checkLeaseToolAt(t *testing.T, rev string) {
	p := newProject(t)
	task := p.taskInProgress("coder", "Rewrite the parser")
	s := leaseSessions{p: p, coder: p.connect(rev), reviewer: p.connect(rev)}
	s.coderToken = p.authenticate(s.coder, "coder", "task")
	s.reviewerToken = p.authenticate(s.reviewer, "reviewer", "chat")

	taken := s.takeParser(t, task.ID)
	s.checkRefusalsChangeNothing(t)
	s.checkSharedAndRenew(t, taken)
	s.checkReleaseFrees(t)
	s.checkLogoutEndsUnkept(t)
}

// takeParser: the coder leases src/parser, exclusive and for its task,
// and gets that one lease back, which it returns.
func (s leaseSessions) takeParser(t *testing.T, taskID string) map[string]any {
	r := call(t, s.coder, "lease", map[string]any{"session_token": s.coderToken, "paths": []string{"src/parser"}, "reason": "rewriting the parser"})
	leases, _ := r.data["leases"].([]any)
	if r.isError || len(leases) != 1 {
		t.Fatalf("take: %s", r.text)
	}
	taken := leases[0].(map[string]any)
	if taken["holder"] != "coder" || taken["exclusive"] != true || taken["task_id"] != taskID {
		t.Fatalf("taken: %v", taken)
	}
	return taken
}

// checkRefusalsChangeNothing: the reviewer's take of what the coder holds
// is a lease_conflict naming the holder, its reason, what to do and that
// nothing was leased; bad calls are refused saying why; none of them
// changes .ai-pm.
func (s leaseSessions) checkRefusalsChangeNothing(t *testing.T) {
	before := s.p.tree()
	r := call(t, s.reviewer, "lease", map[string]any{"session_token": s.reviewerToken, "paths": []string{"src/parser/*.go"}})
	if !r.isError || !strings.HasPrefix(r.text, "lease_conflict") {
		t.Fatalf("conflicting take: %s", r.text)
	}
	for _, want := range []string{"coder", "rewriting the parser", "send_message", "Nothing was leased"} {
		if !strings.Contains(r.text, want) {
			t.Errorf("conflict %q does not say %q", r.text, want)
		}
	}
	for _, bad := range []map[string]any{
		{"session_token": s.reviewerToken, "paths": []string{"../outside"}},
		{"session_token": s.reviewerToken, "paths": []string{}},
		{"session_token": s.reviewerToken, "paths": []string{"docs"}, "ttl": "soon"},
		{"session_token": s.reviewerToken, "paths": []string{"docs"}, "ttl": "100h"},
		{"session_token": s.reviewerToken, "paths": []string{"docs"}, "release": true},
	} {
		if r := call(t, s.reviewer, "lease", bad); !r.isError || len(r.text) < 20 {
			t.Errorf("lease %v: %s, want a refusal that says why", bad, r.text)
		}
	}
	if s.p.tree() != before {
		t.Error("refused lease calls changed .ai-pm")
	}
}

// checkSharedAndRenew: the reviewer takes a shared lease on docs, kept
// past its session; the coder renews its lease by taking it again (a new
// expiry), and get_task shows the task's one lease.
func (s leaseSessions) checkSharedAndRenew(t *testing.T, taken map[string]any) {
	if r := call(t, s.reviewer, "lease", map[string]any{"session_token": s.reviewerToken, "paths": []string{"docs"}, "shared": true, "keep": true}); r.isError {
		t.Fatalf("shared take: %s", r.text)
	}
	r := call(t, s.coder, "lease", map[string]any{"session_token": s.coderToken, "paths": []string{"src/parser"}, "ttl": "2h"})
	if leases, _ := r.data["leases"].([]any); r.isError || len(leases) != 1 || leases[0].(map[string]any)["expires_at"] == taken["expires_at"] {
		t.Fatalf("renew: %s", r.text)
	}
	r = call(t, s.coder, "get_task", map[string]any{"session_token": s.coderToken})
	if ls, _ := r.data["leases"].([]any); r.isError || len(ls) != 1 {
		t.Fatalf("get_task's leases: %s", r.text)
	}
}

// checkReleaseFrees: the coder's release of a path within its lease
// leaves it no lease, and the reviewer can then take what conflicted.
func (s leaseSessions) checkReleaseFrees(t *testing.T) {
	r := call(t, s.coder, "lease", map[string]any{"session_token": s.coderToken, "paths": []string{"src/parser/lexer.go"}, "release": true})
	if leases, _ := r.data["leases"].([]any); r.isError || len(leases) != 0 {
		t.Fatalf("release: %s", r.text)
	}
	if r := call(t, s.reviewer, "lease", map[string]any{"session_token": s.reviewerToken, "paths": []string{"src/parser/*.go"}}); r.isError {
		t.Fatalf("take after release: %s", r.text)
	}
}

// checkLogoutEndsUnkept: the reviewer's session ends, its lease on
// src/parser/*.go with it; the kept one on docs stays.
func (s leaseSessions) checkLogoutEndsUnkept(t *testing.T) {
	if r := call(t, s.reviewer, "logout", map[string]any{"session_token": s.reviewerToken}); r.isError {
		t.Fatalf("logout: %s", r.text)
	}
	live, err := s.p.store.Leases()
	if err != nil || len(live) != 1 || live[0].Paths[0] != "docs" {
		t.Fatalf("after the reviewer's logout: %+v, %v; want only the kept lease on docs", live, err)
	}
}

// Issue 46, item 1: one agent's lease calls through its own aipm serve
// cannot stop the project's writes. 82 calls of 64 long paths with a
// 400-byte reason (which grew leases.json past the 4 MiB every reader
// reads), then 82 of 64 shorter ones, twice: a path longer than a lease
// takes is refused, and so is each take past what one holder may hold,
// with one sentence (the bound, what to release); leases.json stays one
// holder's worth. Then another
// agent's take, the hook (a real aipm hook), aipm leases, a human's break
// and aipm status all work.
func TestLeaseToolBudget(t *testing.T) {
	p := newProject(t)
	p.taskInProgress("coder", "Rewrite everything")
	coder := p.connect("2025-11-25")
	token := p.authenticate(coder, "coder", "task")
	taken := leaseFlood(t, coder, token)
	if taken != 1 {
		t.Fatalf("%d lease calls taken; want the one that fits the holder's budget", taken)
	}
	if fi, err := os.Stat(p.store.LeasesPath()); err != nil || fi.Size() > 32<<10 {
		t.Fatalf("leases.json: %v, %v; want one holder's worth", fi, err)
	}

	reviewer := p.connect("2025-11-25")
	rtoken := p.authenticate(reviewer, "reviewer", "chat")
	if r := call(t, reviewer, "lease", map[string]any{"session_token": rtoken, "paths": []string{"src/parser"}}); r.isError {
		t.Fatalf("another agent's take: %s", r.text)
	}
	feed := func(file string) func(io.Writer) {
		return func(w io.Writer) {
			io.WriteString(w, p.event(hook.PreToolUse, "Write", fmt.Sprintf(`{"file_path":%q,"content":"x"}`, p.store.ProjectDir()+"/"+file)))
		}
	}
	if out, errs, code := p.hookFed(t, "claude", "reviewer", feed("deep40/00/00-"+strings.Repeat("x", 40))); code != 0 || !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, "leased exclusively by coder") {
		t.Fatalf("the hook on a write under coder's lease: %q, exit %d, %s", out, code, errs)
	}
	if out, errs, code := p.hookFed(t, "claude", "reviewer", feed("README.md")); code != 0 || out != "" {
		t.Fatalf("the hook on a write under no lease: %q, exit %d, %s", out, code, errs)
	}
	if out := p.aipmOut(t, "leases"); !strings.Contains(out, "coder") || !strings.Contains(out, "reviewer") {
		t.Fatalf("aipm leases:\n%s", out)
	}
	p.aipm(t, "leases", "break", "deep40", "--reason", "runaway leases", "--as", "lead")
	if out := p.aipmOut(t, "status"); strings.Contains(out, "coder ") && strings.Contains(out, "deep40") || !strings.Contains(out, "reviewer") {
		t.Fatalf("aipm status after the break:\n%s", out)
	}
}

// leaseFlood makes TestLeaseToolBudget's 246 lease calls on cs, the
// coder's session, and returns how many were taken; each refusal must
// name its bound.
func leaseFlood(t *testing.T, cs *mcp.ClientSession, token string) int {
	reason := strings.Repeat("r", 400)
	taken := 0
	for _, size := range []int{780, 200, 40} {
		for n := range 82 {
			paths := make([]string, 64)
			for i := range paths {
				paths[i] = fmt.Sprintf("deep%d/%02d/%02d-%s", size, n, i, strings.Repeat("x", size))
			}
			r := call(t, cs, "lease", map[string]any{"session_token": token, "paths": paths, "reason": reason})
			if !r.isError {
				taken++
				continue
			}
			want := "one holder may: release"
			if size > 256 {
				want = "bytes: at most 256" // a path longer than any a lease takes
			}
			if !strings.Contains(r.text, want) {
				t.Fatalf("call %d of %d-byte paths refused: %s; want the bound (%q) and what to do", n, size, r.text, want)
			}
		}
	}
	return taken
}
