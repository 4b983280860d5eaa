package scriptedmodel_test

import (
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"aipm/internal/scriptedmodel"
)

func start(t *testing.T, script scriptedmodel.Script) *scriptedmodel.Server {
	t.Helper()
	s, err := scriptedmodel.Start(script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func post(t *testing.T, url, body string) string {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s: %s", url, resp.Status, b)
	}
	return string(b)
}

// TestMessages: a Messages API request's tools are those not deferred and
// the deferred ones a tool_reference loaded; its tool results and text are
// read; the script's call streams as a tool_use block with its input.
func TestMessages(t *testing.T) {
	var got *scriptedmodel.Request
	s := start(t, func(r *scriptedmodel.Request) scriptedmodel.Turn {
		got = r
		return scriptedmodel.Turn{Calls: []scriptedmodel.Call{{Name: "mcp__aipm__help", Input: map[string]any{"topic": "markers"}}}}
	})
	out := post(t, s.URL+"/v1/messages?beta=true", `{"model":"m","stream":true,
		"system":[{"type":"text","text":"SYSTEM"}],
		"messages":[{"role":"user","content":"hello"},
			{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"ToolSearch","input":{"query":"x"}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"tool_reference","tool_name":"mcp__aipm__help"}]}]}],
		"tools":[{"name":"ToolSearch","input_schema":{"properties":{"query":{}}}},
			{"name":"mcp__aipm__help","defer_loading":true},{"name":"mcp__aipm__lease","defer_loading":true}]}`)
	var names []string
	for _, tool := range got.Tools {
		names = append(names, tool.Name)
	}
	if !slices.Equal(names, []string{"ToolSearch", "mcp__aipm__help"}) || !got.Tools[0].Search {
		t.Errorf("tools %v (search %v), want ToolSearch (the search) and the loaded mcp__aipm__help", names, got.Tools)
	}
	if len(got.Results) != 1 || got.Results[0].CallID != "t1" || !strings.Contains(got.Results[0].Text, "mcp__aipm__help") {
		t.Errorf("results %+v", got.Results)
	}
	if !strings.Contains(got.Text, "SYSTEM") || !strings.Contains(got.Text, "hello") || got.API != scriptedmodel.Anthropic {
		t.Errorf("text %q, api %s", got.Text, got.API)
	}
	for _, want := range []string{"event: message_start", `"type":"tool_use"`, `"name":"mcp__aipm__help"`, `"partial_json":"{\"topic\":\"markers\"}"`, `"stop_reason":"tool_use"`, "event: message_stop"} {
		if !strings.Contains(out, want) {
			t.Errorf("the stream lacks %s:\n%s", want, out)
		}
	}
}

// TestResponses: a Responses API request's tools are its functions (also
// in a namespace), its tool search, and the functions a tool_search_output
// loaded; a search call streams as a tool_search_call item, a namespaced
// call as a function_call with its namespace.
func TestResponses(t *testing.T) {
	var got *scriptedmodel.Request
	turn := scriptedmodel.Turn{Calls: []scriptedmodel.Call{{Name: "tool_search", Search: true, Input: map[string]any{"query": "+aipm", "limit": 40}}}}
	s := start(t, func(r *scriptedmodel.Request) scriptedmodel.Turn { got = r; return turn })
	body := `{"model":"gpt-5.5","stream":true,"instructions":"INSTR",
		"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hello"}]},
			{"type":"tool_search_output","call_id":"c1","execution":"client","tools":[{"type":"namespace","name":"mcp__aipm","tools":[{"type":"function","name":"help","defer_loading":true}]}]},
			{"type":"function_call_output","call_id":"c2","output":"RESULT"}],
		"tools":[{"type":"function","name":"exec_command"},{"type":"tool_search","parameters":{"properties":{"query":{},"limit":{}}}},{"type":"web_search"}]}`
	out := post(t, s.URL+"/v1/responses", body)
	var names []string
	for _, tool := range got.Tools {
		names = append(names, tool.Namespace+"/"+tool.Name)
	}
	if !slices.Equal(names, []string{"/exec_command", "/tool_search", "mcp__aipm/help"}) {
		t.Errorf("tools %v", names)
	}
	if _, ok := got.SearchTool(); !ok {
		t.Error("no search tool")
	}
	if len(got.Results) != 2 || got.Results[1].Text != "RESULT\n" || !strings.Contains(got.Text, "INSTR") || !strings.Contains(got.Text, "hello") {
		t.Errorf("results %+v, text %q", got.Results, got.Text)
	}
	for _, want := range []string{"event: response.created", `"type":"tool_search_call"`, `"execution":"client"`, `"limit":40`, "event: response.completed"} {
		if !strings.Contains(out, want) {
			t.Errorf("the stream lacks %s:\n%s", want, out)
		}
	}
	turn = scriptedmodel.Turn{Calls: []scriptedmodel.Call{{Namespace: "mcp__aipm", Name: "help", Input: map[string]any{}}}}
	out = post(t, s.URL+"/v1/responses", body)
	if !strings.Contains(out, `"type":"function_call"`) || !strings.Contains(out, `"namespace":"mcp__aipm"`) || !strings.Contains(out, `"arguments":"{}"`) {
		t.Errorf("a namespaced call streams as:\n%s", out)
	}
	if n := len(s.Requests()); n != 2 {
		t.Errorf("%d requests recorded, want 2", n)
	}
}

// TestUnknown: any other request is answered 404 and recorded, a proxied
// one with where it meant to go.
func TestUnknown(t *testing.T) {
	s := start(t, func(*scriptedmodel.Request) scriptedmodel.Turn { return scriptedmodel.Turn{Text: "x"} })
	resp, err := http.Get(s.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	proxy, _ := url.Parse(s.URL)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}}
	if resp, err := client.Get("https://example.invalid/x"); err == nil {
		resp.Body.Close()
		t.Error("a request through the server as a proxy went through")
	}
	if got := s.Unknown(); !slices.Equal(got, []string{"GET /v1/models", "CONNECT example.invalid:443"}) || resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown %q, status %d", got, resp.StatusCode)
	}
}

// TestSearchHintCall: the search is read from aipm's instructions as each
// client shows them, and its count given under the parameters of the
// client's search tool that the sentence names.
func TestSearchHintCall(t *testing.T) {
	search := func(props ...string) scriptedmodel.Tool {
		m := map[string]any{}
		for _, p := range props {
			m[p] = map[string]any{}
		}
		return scriptedmodel.Tool{Name: "s", Search: true, Parameters: map[string]any{"properties": m}}
	}
	const both = `aipm coordinates. If your tools must be searched for before use, one search loads them all: query "+aipm", max_results (or limit) 40. Call authenticate.`
	const claudeOnly = `aipm coordinates. One search loads them all: query "+aipm", max_results 40.`
	for _, tc := range []struct {
		api   scriptedmodel.API
		text  string
		tool  scriptedmodel.Tool
		input map[string]any // nil: no call
	}{
		{scriptedmodel.Anthropic, "\nSearch \"decoy\" elsewhere\n## aipm\n" + both + "\n\n## other\n", search("query", "max_results"), map[string]any{"query": "+aipm", "max_results": 40}},
		{scriptedmodel.OpenAI, "\n- mcp__aipm: " + both + "\n", search("query", "limit"), map[string]any{"query": "+aipm", "limit": 40}},
		{scriptedmodel.OpenAI, "\n- mcp__aipm: " + claudeOnly + "\n", search("query", "limit"), map[string]any{"query": "+aipm"}},
		{scriptedmodel.OpenAI, "\n- mcp__aipm: aipm coordinates. If your tools must be searched for b...\n", search("query", "limit"), nil},
		{scriptedmodel.Anthropic, "no instructions, a search \"decoy\"", search("query", "max_results"), nil},
	} {
		r := &scriptedmodel.Request{API: tc.api, Text: tc.text, Tools: []scriptedmodel.Tool{tc.tool}}
		call, ok := scriptedmodel.SearchHintCall(r)
		if ok != (tc.input != nil) || ok && !equalInput(call.Input, tc.input) {
			t.Errorf("%s %q: call %v (%v), want %v", tc.api, tc.text, call.Input, ok, tc.input)
		}
	}
}

func equalInput(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
