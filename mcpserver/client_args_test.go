package mcpserver_test

import (
	"strings"
	"testing"

	"aipm/fsstore"
)

// TestClientArgumentsAccepted (issue 47): Gemini CLI adds
// wait_for_previous to every tool's schema and passes it in every call.
// Through a real aipm serve and the SDK's client, at each protocol, such a
// call runs as the same call without it, whatever the tool's level; an
// argument aipm does not know is still refused, naming it, and so is the
// client's argument with a value of another type.
func TestClientArgumentsAccepted(t *testing.T) {
	for _, protocol := range groupProtocols {
		t.Run(protocol, func(t *testing.T) {
			p := newProject(t)
			p.taskInProgress("coder", "Write the parser")
			cs := p.connect(protocol)
			r := call(t, cs, "authenticate", map[string]any{"agent_id": "coder", "passkey": p.passkeys["coder"], "purpose": fsstore.PurposeTask, "wait_for_previous": true})
			if r.isError {
				t.Fatalf("authenticate with wait_for_previous: %s", r.text)
			}
			token := r.str("session_token")
			for _, c := range []struct {
				tool string
				args map[string]any
			}{
				{"help", map[string]any{"wait_for_previous": false}},
				{"list_tasks", map[string]any{"session_token": token, "wait_for_previous": true}},
				{"get_notifications", map[string]any{"session_token": token, "wait_for_previous": false}},
			} {
				if r := call(t, cs, c.tool, c.args); r.isError {
					t.Errorf("%s with wait_for_previous: %s", c.tool, r.text)
				}
			}
			for _, c := range []struct {
				args map[string]any
				name string
			}{
				{map[string]any{"session_token": token, "wait_for_previus": true}, "wait_for_previus"},
				{map[string]any{"session_token": token, "wait_for_previous": "yes"}, "wait_for_previous"},
			} {
				r := call(t, cs, "list_tasks", c.args)
				if !r.isError || !strings.Contains(r.text, c.name) {
					t.Errorf("list_tasks with %v: want an error naming %s, got %q (error %v)", c.args, c.name, r.text, r.isError)
				}
			}
		})
	}
}
