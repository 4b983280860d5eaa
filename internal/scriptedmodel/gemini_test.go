package scriptedmodel_test

import (
	"slices"
	"strings"
	"testing"

	"aipm/internal/scriptedmodel"
)

// TestGemini: a Gemini API request's tools are its function declarations
// (schema under parametersJsonSchema or parameters), its functionResponse
// parts the results, the model the URL's; a call streams as a functionCall
// part in one server-sent event; countTokens answers a count.
func TestGemini(t *testing.T) {
	var got *scriptedmodel.Request
	s := start(t, func(r *scriptedmodel.Request) scriptedmodel.Turn {
		got = r
		return scriptedmodel.Turn{Calls: []scriptedmodel.Call{{Name: "mcp_aipm_help", Input: map[string]any{"topic": "markers"}}}}
	})
	body := `{"systemInstruction":{"role":"user","parts":[{"text":"SYSTEM"}]},
		"contents":[{"role":"user","parts":[{"text":"hello"}]},
			{"role":"model","parts":[{"functionCall":{"id":"c1","name":"mcp_aipm_help","args":{}}}]},
			{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"mcp_aipm_help","response":{"output":"RESULT"}}}]}],
		"tools":[{"functionDeclarations":[{"name":"write_file","parametersJsonSchema":{"properties":{"file_path":{}}}},
			{"name":"mcp_aipm_help","description":"Help.","parameters":{"properties":{"topic":{}}}}]}]}`
	out := post(t, s.URL+"/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", body)
	var names []string
	for _, tool := range got.Tools {
		names = append(names, tool.Name)
	}
	if !slices.Equal(names, []string{"write_file", "mcp_aipm_help"}) || got.Tools[0].Parameters == nil || got.Tools[1].Parameters == nil {
		t.Errorf("tools %+v", got.Tools)
	}
	if got.API != scriptedmodel.Gemini || got.Model != "gemini-2.5-pro" {
		t.Errorf("api %s model %q", got.API, got.Model)
	}
	if len(got.Results) != 1 || got.Results[0].CallID != "c1" || !strings.Contains(got.Results[0].Text, "RESULT") {
		t.Errorf("results %+v", got.Results)
	}
	if !strings.Contains(got.Text, "SYSTEM") || !strings.Contains(got.Text, "hello") || !strings.Contains(got.Text, "RESULT") {
		t.Errorf("text %q", got.Text)
	}
	for _, want := range []string{"data: {", `"functionCall":{`, `"name":"mcp_aipm_help"`, `"args":{"topic":"markers"}`, `"finishReason":"STOP"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the stream lacks %s:\n%s", want, out)
		}
	}
	if out := post(t, s.URL+"/v1beta/models/gemini-2.5-pro:countTokens", body); !strings.Contains(out, `"totalTokens"`) {
		t.Errorf("countTokens answered %s", out)
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("%d requests recorded, want 1 (countTokens is not a model turn)", n)
	}
}
