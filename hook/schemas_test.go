package hook

import (
	"testing"

	"aipm/fsstore"
	"aipm/internal/clients"
	"aipm/internal/hookschema"
)

const schemaDir = "../testdata/hooks"

// Every output aipm hook can print, checked against both clients'
// documented shapes (Codex's refuse unknown fields).
func TestHookOutputsMatchClientSchemas(t *testing.T) {
	for _, client := range []string{"claude", "codex"} {
		c, _ := clients.Get(client)
		d := c.Hooks
		outputs := []struct {
			event string
			res   Result
		}{
			{SessionStart, addContext(d, SessionStart, "aipm: you are agent coder")},
			{UserPromptSubmit, addContext(d, UserPromptSubmit, "aipm: 1 new message")},
			{PostToolUse, addContext(d, PostToolUse, "aipm: 1 new message")},
			{PreToolUse, denied(d, "aipm interrupt for coder: stop", fsstore.Denial{Why: fsstore.DeniedInterrupt})},
			{Stop, block(d, "aipm: 1 new message")},
		}
		for _, o := range outputs {
			if err := hookschema.Check(schemaDir, client, o.event, o.res.Stdout); err != nil {
				t.Error(err)
			}
		}
	}
	// The check can fail: a field the clients do not document, a deny
	// without its reason, a block without its reason.
	for _, bad := range []struct{ event, out string }{
		{PostToolUse, `{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"x","extra":1}}`},
		{PreToolUse, `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":""}}`},
		{Stop, `{"decision":"block"}`},
		{SessionStart, `{"hookSpecificOutput":{"hookEventName":"Stop"}}`},
	} {
		if err := hookschema.Check(schemaDir, "codex", bad.event, []byte(bad.out)); err == nil {
			t.Errorf("codex %s accepted %s", bad.event, bad.out)
		}
	}
}

// What one hook says stays under the clients' cap, however much waits.
func TestUntoldTextIsBounded(t *testing.T) {
	var n fsstore.Notices
	for i := range 10000 {
		n.Messages = append(n.Messages, fsstore.Message{SenderID: "s" + string(rune('a'+i%26)) + string(rune('a'+i/26%26))})
		n.Notifications = append(n.Notifications, fsstore.Notification{Message: "x"})
		n.Requests = append(n.Requests, fsstore.Conversation{ID: "cnv_x", Initiator: "lead"})
	}
	c, _ := clients.Get("codex")
	res := addContext(c.Hooks, PostToolUse, untoldText(n))
	if len(res.Stdout) > 2*MaxContext {
		t.Fatalf("%d bytes out", len(res.Stdout))
	}
	if err := hookschema.Check(schemaDir, "codex", PostToolUse, res.Stdout); err != nil {
		t.Fatal(err)
	}
}
