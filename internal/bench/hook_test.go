package bench

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
)

// TestHookInput: the stdin a hook is given names the event, the working
// directory and a transcript in it; PostToolUse adds a Bash call, Stop
// says no stop hook is active.
func TestHookInput(t *testing.T) {
	common := []string{"cwd", "hook_event_name", "session_id", "transcript_path"}
	for _, tc := range []struct {
		event string
		keys  []string // beside common
	}{
		{"PostToolUse", []string{"tool_input", "tool_name", "tool_response"}},
		{"Stop", []string{"stop_hook_active"}},
		{"UserPromptSubmit", nil},
	} {
		t.Run(tc.event, func(t *testing.T) {
			var in map[string]any
			if err := json.Unmarshal(hookInput(tc.event, "/p"), &in); err != nil {
				t.Fatal(err)
			}
			want := slices.Sorted(slices.Values(append(slices.Clone(common), tc.keys...)))
			if got := slices.Sorted(maps.Keys(in)); !slices.Equal(got, want) {
				t.Errorf("keys %q, want %q", got, want)
			}
			if in["hook_event_name"] != tc.event || in["cwd"] != "/p" || in["transcript_path"] != "/p/transcript.jsonl" {
				t.Errorf("input %v", in)
			}
			switch tc.event {
			case "PostToolUse":
				if in["tool_name"] != "Bash" {
					t.Errorf("tool_name %v, want Bash", in["tool_name"])
				}
			case "Stop":
				if in["stop_hook_active"] != false {
					t.Errorf("stop_hook_active %v, want false", in["stop_hook_active"])
				}
			}
		})
	}
}
