package scriptedmodel

import (
	"encoding/json"
	"net/http"
	"strings"
)

// readResponses reads a Responses API request. The tools the model can
// call are the functions offered without defer_loading (at the top or in a
// namespace), the client's own custom tools and tool search, and the
// functions a tool_search_output item of the input has loaded.
func readResponses(body []byte) (*Request, bool, error) {
	var in struct {
		Model        string           `json:"model"`
		Instructions string           `json:"instructions"`
		Input        []map[string]any `json:"input"`
		Tools        []map[string]any `json:"tools"`
		Stream       bool             `json:"stream"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, false, err
	}
	req := &Request{Model: in.Model}
	var text strings.Builder
	text.WriteString(in.Instructions + "\n")
	for _, t := range in.Tools {
		req.Tools = append(req.Tools, offered(t, "", false)...)
		req.addNamespace(t, false)
	}
	for _, item := range in.Input {
		switch str(item["type"]) {
		case "function_call_output", "custom_tool_call_output":
			var result strings.Builder
			texts(&result, item["output"])
			req.Results = append(req.Results, Result{CallID: str(item["call_id"]), Text: result.String()})
			text.WriteString(result.String())
		case "tool_search_output":
			var names strings.Builder
			loaded, _ := item["tools"].([]any)
			for _, t := range loaded {
				req.addNamespace(object(t), true)
				for _, tool := range offered(object(t), "", true) {
					req.Tools = append(req.Tools, tool)
					names.WriteString(tool.Namespace + tool.Name + "\n")
				}
			}
			req.Results = append(req.Results, Result{CallID: str(item["call_id"]), Text: names.String()})
		default:
			texts(&text, item["content"])
		}
	}
	req.Text = text.String()
	return req, in.Stream, nil
}

// addNamespace records t's definition when t is a namespace offered to
// the model (Request.Namespaces).
func (r *Request) addNamespace(t map[string]any, loaded bool) {
	if str(t["type"]) != "namespace" || t["defer_loading"] == true && !loaded {
		return
	}
	if r.Namespaces == nil {
		r.Namespaces = map[string]json.RawMessage{}
	}
	r.Namespaces[str(t["name"])] = definition(t)
}

// offered are the tools a tool definition t gives the model, within
// namespace ns; loaded says a tool search loaded t (defer_loading then no
// longer hides it).
func offered(t map[string]any, ns string, loaded bool) []Tool {
	if t["defer_loading"] == true && !loaded {
		return nil
	}
	switch str(t["type"]) {
	case "namespace":
		var tools []Tool
		inner, _ := t["tools"].([]any)
		for _, e := range inner {
			tools = append(tools, offered(object(e), str(t["name"]), loaded)...)
		}
		return tools
	case "function", "custom":
		return []Tool{{Namespace: ns, Name: str(t["name"]), Description: str(t["description"]), Parameters: object(t["parameters"]), Custom: str(t["type"]) == "custom", Definition: definition(t)}}
	case "tool_search":
		return []Tool{{Name: "tool_search", Description: str(t["description"]), Parameters: object(t["parameters"]), Search: true}}
	}
	return nil // the client's hosted tools (web_search): not the model's to call here
}

// responses answers POST /v1/responses, streamed or whole.
func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	req, turn, stream, ok := s.record(w, r, OpenAI, readResponses)
	if !ok {
		return
	}
	var output []map[string]any
	for _, c := range turn.Calls {
		input := c.Input
		if input == nil {
			input = map[string]any{}
		}
		item := map[string]any{"id": s.nextID("fc"), "call_id": s.nextID("call"), "status": "completed"}
		switch {
		case c.Search:
			item["type"], item["execution"], item["arguments"] = "tool_search_call", "client", input
		case c.Raw != "":
			item["type"], item["name"], item["input"] = "custom_tool_call", c.Name, c.Raw
		default:
			args, _ := json.Marshal(input)
			item["type"], item["name"], item["arguments"] = "function_call", c.Name, string(args)
			if c.Namespace != "" {
				item["namespace"] = c.Namespace
			}
		}
		output = append(output, item)
	}
	if len(output) == 0 {
		output = append(output, map[string]any{"type": "message", "id": s.nextID("msg"), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": turn.Text, "annotations": []any{}}}})
	}
	id := s.nextID("resp")
	usage := map[string]any{"input_tokens": len(req.Body) / 4, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": 1, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": len(req.Body)/4 + 1}
	resp := map[string]any{"id": id, "object": "response", "model": req.Model, "status": "completed", "output": output, "usage": usage}
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	sse(w, "response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": id, "object": "response", "status": "in_progress", "output": []any{}}})
	for i, item := range output {
		sse(w, "response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": i, "item": item})
		sse(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": i, "item": item})
	}
	sse(w, "response.completed", map[string]any{"type": "response.completed", "response": resp})
}
