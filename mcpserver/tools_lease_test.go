package mcpserver_test

import (
	"strings"
	"testing"
)

// The lease tool (DESIGN section 18) through aipm serve at each protocol
// revision the real clients speak: take, a conflict naming the holder, a
// shared lease beside a shared one, renew by taking again, the task's
// leases on get_task, release, refusals that change nothing, and a
// session's end ending its leases unless kept.
func TestLeaseTool(t *testing.T) {
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) {
			p := newProject(t)
			task := p.taskInProgress("coder", "Rewrite the parser")
			coder, reviewer := p.connect(rev), p.connect(rev)
			ct := p.authenticate(coder, "coder", "task")
			rt := p.authenticate(reviewer, "reviewer", "chat")

			r := call(t, coder, "lease", map[string]any{"session_token": ct, "paths": []string{"src/parser"}, "reason": "rewriting the parser"})
			leases, _ := r.data["leases"].([]any)
			if r.isError || len(leases) != 1 {
				t.Fatalf("take: %s", r.text)
			}
			taken := leases[0].(map[string]any)
			if taken["holder"] != "coder" || taken["exclusive"] != true || taken["task_id"] != task.ID {
				t.Fatalf("taken: %v", taken)
			}

			before := p.tree()
			r = call(t, reviewer, "lease", map[string]any{"session_token": rt, "paths": []string{"src/parser/*.go"}})
			if !r.isError || !strings.HasPrefix(r.text, "lease_conflict") {
				t.Fatalf("conflicting take: %s", r.text)
			}
			for _, want := range []string{"coder", "rewriting the parser", "send_message", "Nothing was leased"} {
				if !strings.Contains(r.text, want) {
					t.Errorf("conflict %q does not say %q", r.text, want)
				}
			}
			for _, bad := range []map[string]any{
				{"session_token": rt, "paths": []string{"../outside"}},
				{"session_token": rt, "paths": []string{}},
				{"session_token": rt, "paths": []string{"docs"}, "ttl": "soon"},
				{"session_token": rt, "paths": []string{"docs"}, "ttl": "100h"},
				{"session_token": rt, "paths": []string{"docs"}, "release": true},
			} {
				if r := call(t, reviewer, "lease", bad); !r.isError || len(r.text) < 20 {
					t.Errorf("lease %v: %s, want a refusal that says why", bad, r.text)
				}
			}
			if p.tree() != before {
				t.Error("refused lease calls changed .ai-pm")
			}

			if r := call(t, reviewer, "lease", map[string]any{"session_token": rt, "paths": []string{"docs"}, "shared": true, "keep": true}); r.isError {
				t.Fatalf("shared take: %s", r.text)
			}
			r = call(t, coder, "lease", map[string]any{"session_token": ct, "paths": []string{"src/parser"}, "ttl": "2h"})
			if leases, _ := r.data["leases"].([]any); r.isError || len(leases) != 1 || leases[0].(map[string]any)["expires_at"] == taken["expires_at"] {
				t.Fatalf("renew: %s", r.text)
			}
			r = call(t, coder, "get_task", map[string]any{"session_token": ct})
			if ls, _ := r.data["leases"].([]any); r.isError || len(ls) != 1 {
				t.Fatalf("get_task's leases: %s", r.text)
			}

			r = call(t, coder, "lease", map[string]any{"session_token": ct, "paths": []string{"src/parser/lexer.go"}, "release": true})
			if leases, _ := r.data["leases"].([]any); r.isError || len(leases) != 0 {
				t.Fatalf("release: %s", r.text)
			}
			if r := call(t, reviewer, "lease", map[string]any{"session_token": rt, "paths": []string{"src/parser/*.go"}}); r.isError {
				t.Fatalf("take after release: %s", r.text)
			}

			// The reviewer's session ends: its lease on src/parser/*.go
			// with it, the kept one on docs stays.
			if r := call(t, reviewer, "logout", map[string]any{"session_token": rt}); r.isError {
				t.Fatalf("logout: %s", r.text)
			}
			live, err := p.store.Leases()
			if err != nil || len(live) != 1 || live[0].Paths[0] != "docs" {
				t.Fatalf("after the reviewer's logout: %+v, %v; want only the kept lease on docs", live, err)
			}
		})
	}
}
