package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"aipm/fsstore"
	"aipm/mcpserver"
)

// Every oversized or malformed argument is refused with its code, the
// answer stays small however large the argument, and nothing changes on
// disk (DESIGN section 14).
func TestInputLimits(t *testing.T) {
	p := newProject(t)
	task := p.taskInProgress("coder", "limits")
	cs := p.connect("")
	token := p.authenticate(cs, "coder", "task")
	chat := p.authenticate(cs, "reviewer", "chat")
	huge := "tsk_" + strings.Repeat("A", 10<<20) // a 10 MB id
	over := func(field string) string { return strings.Repeat("é", fsstore.TextLimits[field]+1) }
	before := p.tree()
	for _, tc := range []struct {
		name string
		tool string
		args map[string]any
		code string
	}{
		{"content too long", "send_message", map[string]any{"session_token": chat, "target_agent_id": "coder", "content": over("content")}, "content_too_long"},
		{"reason too long", "update_task_status", map[string]any{"session_token": token, "status": "blocked", "reason": over("reason")}, "reason_too_long"},
		{"summary too long", "report_completed", map[string]any{"session_token": token, "result": "success", "summary": over("summary")}, "summary_too_long"},
		{"empty status", "update_task_status", map[string]any{"session_token": token, "status": ""}, "invalid_arguments"},
		{"empty result", "report_completed", map[string]any{"session_token": token, "result": "", "summary": "x"}, "invalid_arguments"},
		{"empty status filter", "list_tasks", map[string]any{"session_token": token, "status": ""}, "invalid_arguments"},
		{"10 MB task id", "get_task", map[string]any{"session_token": token, "task_id": huge}, "invalid_request"},
		{"10 MB parent id", "list_tasks", map[string]any{"session_token": token, "parent_id": huge}, "invalid_task_id"},
		{"10 MB assignee", "list_tasks", map[string]any{"session_token": token, "assignee": huge}, "invalid_agent_id"},
		{"10 MB target", "send_message", map[string]any{"session_token": chat, "target_agent_id": huge, "content": "hi"}, "agent_not_found"},
		{"10 MB related task", "send_message", map[string]any{"session_token": chat, "target_agent_id": "coder", "content": "hi", "related_task_id": huge}, "task_not_found"},
		{"10 MB status", "update_task_status", map[string]any{"session_token": token, "status": huge}, "invalid_arguments"},
		{"10 MB session token", "get_task", map[string]any{"session_token": huge}, "invalid_session"},
		{"10 MB agent id", "authenticate", map[string]any{"agent_id": huge, "passkey": "x"}, "authentication_failed"},
		{"10 MB passkey", "authenticate", map[string]any{"agent_id": "coder", "passkey": huge}, "authentication_failed"},
		{"10 MB project id", "authenticate", map[string]any{"agent_id": "coder", "passkey": p.passkeys["coder"], "project_id": huge}, "authentication_failed"},
		{"passkey with spaces", "authenticate", map[string]any{"agent_id": "coder", "passkey": " " + p.passkeys["coder"] + "\n"}, "authentication_failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, cs, tc.tool, tc.args)
			if r.code() != tc.code {
				t.Errorf("got %.300q, want code %s", r.text, tc.code)
			}
			if len(r.text) > 1024 {
				t.Errorf("answer has %d bytes; an error must stay under 1 KB", len(r.text))
			}
		})
	}
	if p.tree() != before {
		t.Error("refused input changed .ai-pm")
	}
	if got, _ := p.store.Task(task.ID); got.Status != fsstore.StatusInProgress {
		t.Errorf("task is %s after refused calls", got.Status)
	}
}

// textField names the CheckText field an argument is checked as, where it
// is not the argument's own name.
var textField = map[string]string{
	"initial_message": "content", // start_conversation: the first message
	"message":         "content", // notify_task_session: the note
}

// TestStatedLimits: every number an input schema's description states is
// the limit the code enforces: a text argument's "at most N characters" is
// its CheckText limit (fsstore/internal/storage/limits.go), a listing's "default D, at most
// M" its page limit, wait_seconds' and max_turns' bounds fsstore's. A
// number the test cannot account for fails it, so a new stated limit comes
// with its check here.
func TestStatedLimits(t *testing.T) {
	p := newProject(t)
	cs := p.connect("")
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	pages := mcpserver.PageLimits()
	digits := regexp.MustCompile(`[0-9]`)
	for _, tool := range res.Tools {
		raw, _ := json.Marshal(tool.InputSchema)
		var schema struct {
			Properties map[string]struct {
				Description string `json:"description"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(raw, &schema); err != nil {
			t.Fatalf("%s: %v", tool.Name, err)
		}
		page, paged := pages[tool.Name]
		if _, ok := schema.Properties["limit"]; ok != paged {
			t.Errorf("%s: a limit argument (%v) needs a page limit in its spec (%v), and the reverse", tool.Name, ok, paged)
		}
		for name, prop := range schema.Properties {
			desc := prop.Description
			want := statedLimit(t, name, desc, page)
			if want != "" && !strings.Contains(desc, want) {
				t.Errorf("%s.%s: description %q does not state %q", tool.Name, name, desc, want)
			}
			if rest := strings.Replace(desc, want, "", 1); digits.MatchString(rest) {
				t.Errorf("%s.%s: description %q states a number this test does not check: add its rule to statedLimit", tool.Name, name, desc)
			}
		}
	}
}

// statedLimit is what the description of argument name must say about its
// limit, "" if nothing.
func statedLimit(t *testing.T, name, desc string, page [2]int) string {
	t.Helper()
	switch {
	case name == "limit":
		return fmt.Sprintf("default %d, at most %d", page[0], page[1])
	case name == "message_ids":
		return fmt.Sprintf("at most %d", fsstore.MaxMarkRead)
	case name == "wait_seconds":
		return fmt.Sprintf("at most %d", fsstore.MaxWait)
	case name == "ttl":
		if d, err := time.ParseDuration("30m"); err != nil || d != 30*time.Minute {
			t.Errorf("ttl's example 30m does not parse: %v", err)
		}
		return "like 30m"
	case name == "max_turns":
		return fmt.Sprintf("%d to %d (default %d)", fsstore.MinMaxTurns, fsstore.MaxMaxTurns, fsstore.DefaultMaxTurns)
	case strings.Contains(desc, "characters"):
		field := name
		if f, ok := textField[name]; ok {
			field = f
		}
		limit, ok := fsstore.TextLimits[field]
		if !ok {
			t.Errorf("%s states a length but is no CheckText field: map it in textField", name)
			return ""
		}
		if fsstore.CheckText(field, strings.Repeat("é", limit)) != nil || fsstore.CheckText(field, strings.Repeat("é", limit+1)) == nil {
			t.Errorf("CheckText(%q) does not enforce %d characters", field, limit)
		}
		return fmt.Sprintf("at most %d characters", limit)
	}
	return ""
}

// TestPageLimits: every listing tool refuses a limit past its page limit,
// and takes the page limit itself.
func TestPageLimits(t *testing.T) {
	p := newProject(t)
	p.taskInProgress("coder", "page limits")
	cs := p.connect("")
	token := p.authenticate(cs, "coder", "task")
	chat := p.authenticate(cs, "reviewer", "chat")
	args := map[string]map[string]any{
		"list_tasks":                {"session_token": token},
		"get_notifications":         {"session_token": token},
		"get_pending_messages":      {"session_token": chat},
		"get_conversation_messages": {"session_token": token, "conversation_id": "cnv_01M80000000000000000000000"},
	}
	pages := mcpserver.PageLimits()
	if len(pages) != len(args) {
		t.Errorf("listing tools %v; the test calls %d", pages, len(args))
	}
	for tool, page := range pages {
		a := args[tool]
		a["limit"] = page[1] + 1
		r := call(t, cs, tool, a)
		if want := fmt.Sprintf("use 1 to %d", page[1]); r.code() != "invalid_limit" || !strings.Contains(r.text, want) {
			t.Errorf("%s limit %d: got %q, want invalid_limit saying %q", tool, page[1]+1, r.text, want)
		}
		a["limit"] = page[1]
		if r := call(t, cs, tool, a); r.code() == "invalid_limit" {
			t.Errorf("%s limit %d: %s", tool, page[1], r.text)
		}
	}
}
