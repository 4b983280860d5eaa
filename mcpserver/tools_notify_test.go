package mcpserver_test

import (
	"context"
	"slices"
	"testing"

	"aipm/fsstore"
)

// Seed 000: get_notifications lists a new_message notification for each
// unread message of a chat session, with message_id and sender_id,
// derived from the chat log; once the messages are read, so are they. A
// task session, which does not read chat, gets none.
func TestNewMessageNotifications(t *testing.T) {
	p := newProject(t)
	cs, task := p.connect(""), p.connect("")
	chat := p.authenticate(cs, "coder", "chat")
	p.send("lead", "coder", "first")
	p.send("lead", "coder", "second")
	r := call(t, cs, "get_notifications", map[string]any{"session_token": chat})
	ns, _ := r.data["notifications"].([]any)
	if r.isError || len(ns) != 2 {
		t.Fatalf("get_notifications: %s", r.text)
	}
	newest := ns[0].(map[string]any)
	if newest["type"] != "new_message" || newest["sender_id"] != "lead" || newest["message_id"] == "" || newest["message_id"] != newest["id"] {
		t.Fatalf("new_message notification: %v", newest)
	}
	pending := call(t, cs, "get_pending_messages", map[string]any{"session_token": chat})
	msgs, _ := pending.data["pending_messages"].([]any)
	if pending.isError || len(msgs) != 2 || msgs[1].(map[string]any)["id"] != newest["message_id"] {
		t.Fatalf("get_pending_messages: %s", pending.text)
	}
	call(t, cs, "get_next_action", map[string]any{"session_token": chat, "wait_seconds": 1}) // acknowledges the batch
	if r := call(t, cs, "get_notifications", map[string]any{"session_token": chat}); len(r.data["notifications"].([]any)) != 0 {
		t.Fatalf("after the messages were read: %s", r.text)
	}
	p.send("lead", "coder", "third")
	p.taskInProgress("coder", "Write the parser")
	tt := p.authenticate(task, "coder", "task")
	if r := call(t, task, "get_notifications", map[string]any{"session_token": tt}); r.isError || len(r.data["notifications"].([]any)) != 0 {
		t.Fatalf("a task session: %s", r.text)
	}
}

// Stored notifications and derived new_message items make one page:
// newest first overall, never more than limit, the stored ones (the batch
// the call hands out) always whole; has_more says what waits.
func TestNewMessageNotificationsPage(t *testing.T) {
	p := newProject(t)
	cs := p.connect("")
	chat := p.authenticate(cs, "coder", "chat")
	p.send("lead", "coder", "first")
	if _, err := p.store.Notify(context.Background(), "coder", fsstore.Notification{Message: "the build is red"}); err != nil {
		t.Fatal(err)
	}
	p.send("lead", "coder", "second")
	r := call(t, cs, "get_notifications", map[string]any{"session_token": chat, "mark_as_read": false})
	ns, _ := r.data["notifications"].([]any)
	if r.isError || len(ns) != 3 {
		t.Fatalf("get_notifications: %s", r.text)
	}
	var types []string
	for _, n := range ns {
		types = append(types, n.(map[string]any)["type"].(string))
	}
	if want := []string{"new_message", "info", "new_message"}; !slices.Equal(types, want) {
		t.Errorf("types newest first %v, want %v", types, want)
	}
	r = call(t, cs, "get_notifications", map[string]any{"session_token": chat, "mark_as_read": false, "limit": 1})
	ns, _ = r.data["notifications"].([]any)
	if r.isError || len(ns) != 1 || ns[0].(map[string]any)["type"] != "info" || r.data["has_more"] != true {
		t.Fatalf("a page of one: %s", r.text)
	}
}
