package opencode

import (
	"bytes"
	"reflect"
	"testing"

	"aipm/internal/clients/clientkit"
)

// TestOutputRefusals: of opencode run --format json's events (as 1.18.33
// prints them), a call its permission rules refused and its invalid tool
// standing for a tool the access level leaves out are refusals; a call of
// a tool that does not exist, a call aipm's plugin denied, a tool's own
// failure and a call that ran are not. The
// events may arrive split anywhere.
func TestOutputRefusals(t *testing.T) {
	events := `{"type":"step_start","part":{"type":"step-start"}}
{"type":"tool_use","part":{"type":"tool","tool":"bash","callID":"call_1","state":{"status":"error","input":{"command":"cat /etc/x"},"error":"The user has specified a rule which prevents you from using this specific tool call. Here are some of the relevant rules [{\"permission\":\"external_directory\",\"pattern\":\"*\",\"action\":\"deny\"}]"}}}
{"type":"tool_use","part":{"type":"tool","tool":"invalid","callID":"call_2","state":{"status":"completed","input":{"tool":"write","error":"Model tried to call unavailable tool 'write'. Available tools: read, glob."},"output":"The arguments provided to the tool are invalid"}}}
{"type":"tool_use","part":{"type":"tool","tool":"invalid","callID":"call_5","state":{"status":"completed","input":{"tool":"str_replace","error":"Model tried to call unavailable tool 'str_replace'. Available tools: read, glob."},"output":"The arguments provided to the tool are invalid"}}}
{"type":"tool_use","part":{"type":"tool","tool":"edit","callID":"call_3","state":{"status":"error","input":{"filePath":"a.txt"},"error":"aipm: a.txt is leased exclusively by lead"}}}
{"type":"tool_use","part":{"type":"tool","tool":"bash","callID":"call_4","state":{"status":"completed","input":{"command":"ls"},"output":"a.txt"}}}
{"type":"text","part":{"type":"text","text":"Done."}}
not an event
`
	var log bytes.Buffer
	out := newOpenCodeOutput(clientkit.Run{Access: clientkit.AccessRead}, &log)
	for i := 0; i < len(events); i += 7 {
		out.Write([]byte(events[i:min(i+7, len(events))]))
	}
	want := []clientkit.Refusal{
		{ID: "call_1", Tool: "bash"},
		{ID: "call_2", Tool: "write", Said: "not offered at this access"},
	}
	if got := out.Refusals(); !reflect.DeepEqual(got, want) {
		t.Errorf("refusals: got %+v, want %+v", got, want)
	}
	for _, said := range []string{"Done.", "not an event", "leased exclusively by lead", "[bash completed]"} {
		if !bytes.Contains(log.Bytes(), []byte(said)) {
			t.Errorf("the log does not say %q:\n%s", said, log.Bytes())
		}
	}
}
