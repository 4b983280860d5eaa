package mcpserver_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"aipm/fsstore"
)

// TestOverLimitFieldsServedCut: a field written by hand far past its limit
// (a task's description, a chat line) is served cut, with a marker saying
// where the whole text is, by every tool that serves it; the files keep it
// whole.
func TestOverLimitFieldsServedCut(t *testing.T) {
	p := newProject(t)
	task := p.taskInProgress("coder", "big")
	huge := strings.Repeat("x", 2<<20)
	path := filepath.Join(p.store.CollectionDir(fsstore.Tasks), task.ID+".json")
	var doc map[string]any
	if err := readDoc(path, &doc); err != nil {
		t.Fatal(err)
	}
	doc["description"] = huge
	data, _ := json.Marshal(doc)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	chat, _ := p.store.ChatPath("coder")
	line, _ := json.Marshal(fsstore.Message{ID: "msg_01M80000000000000000000001", SenderID: "reviewer", Content: huge, CreatedAt: "2026-11-21T12:00:00.000000Z"})
	f, err := os.OpenFile(chat, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(append(line, '\n'))
	f.Close()

	cs := p.connect("")
	token := p.authenticate(cs, "coder", fsstore.PurposeTask)
	wantMarker := "… [cut: 2,097,152 bytes in .ai-pm/tasks/" + task.ID + ".json; limit 20,000]"
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"get_task", map[string]any{"session_token": token, "task_id": task.ID}},
		{"list_tasks", map[string]any{"session_token": token}},
		{"get_task", map[string]any{"session_token": token}},
	} {
		r := call(t, cs, c.tool, c.args)
		if r.isError {
			t.Fatalf("%s: %s", c.tool, r.text)
		}
		if len(r.text) > 200_000 || !strings.Contains(r.text, wantMarker) {
			t.Errorf("%s: %d bytes of text, marker %q present: %v", c.tool, len(r.text), wantMarker, strings.Contains(r.text, wantMarker))
		}
	}
	chatToken := p.authenticate(cs, "coder", fsstore.PurposeChat)
	r := call(t, cs, "get_pending_messages", map[string]any{"session_token": chatToken})
	if r.isError {
		t.Fatalf("get_pending_messages: %s", r.text)
	}
	if want := "… [cut: 2,097,152 bytes in .ai-pm/agents/coder/chat.jsonl:1; limit 4,000]"; len(r.text) > 200_000 || !strings.Contains(r.text, want) {
		t.Errorf("get_pending_messages: %d bytes of text, marker %q present: %v", len(r.text), want, strings.Contains(r.text, want))
	}
	if got, _ := os.ReadFile(path); !strings.Contains(string(got), huge) {
		t.Error("the task file lost its description")
	}
}
