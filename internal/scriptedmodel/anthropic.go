package scriptedmodel

import (
	"encoding/json"
	"net/http"
	"strings"
)

// The names of the Messages API clients' tool searches: Claude Code's,
// GitHub Copilot CLI's (a regex "pattern").
const (
	claudeSearchTool  = "ToolSearch"
	copilotSearchTool = "tool_search_tool"
)

// readMessages reads a Messages API request. The tools the model can call
// are those offered without defer_loading, and the deferred ones a tool
// result has loaded (a tool_reference block naming them).
func readMessages(body []byte) (*Request, bool, error) {
	var in struct {
		Model    string           `json:"model"`
		System   any              `json:"system"`
		Messages []map[string]any `json:"messages"`
		Tools    []map[string]any `json:"tools"`
		Stream   bool             `json:"stream"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, false, err
	}
	req := &Request{Model: in.Model}
	var text strings.Builder
	texts(&text, in.System)
	referenced := map[string]bool{}
	for _, m := range in.Messages {
		texts(&text, m["content"])
		blocks, _ := m["content"].([]any)
		for _, b := range blocks {
			block := object(b)
			if str(block["type"]) != "tool_result" {
				continue
			}
			var result strings.Builder
			texts(&result, block["content"])
			parts, _ := block["content"].([]any)
			for _, p := range parts {
				if part := object(p); str(part["type"]) == "tool_reference" {
					name := str(part["tool_name"])
					referenced[name] = true
					result.WriteString(name + "\n")
				}
			}
			req.Results = append(req.Results, Result{CallID: str(block["tool_use_id"]), Text: result.String()})
		}
	}
	req.Text = text.String()
	for _, t := range in.Tools {
		name := str(t["name"])
		if t["defer_loading"] == true && !referenced[name] {
			continue
		}
		req.Tools = append(req.Tools, Tool{Name: name, Description: str(t["description"]),
			Parameters: object(t["input_schema"]), Search: name == claudeSearchTool || name == copilotSearchTool, Definition: definition(t)})
	}
	return req, in.Stream, nil
}

// messages answers POST /v1/messages, streamed or whole.
func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	req, turn, stream, ok := s.record(w, r, Anthropic, readMessages)
	if !ok {
		return
	}
	var content []map[string]any
	stop := "end_turn"
	for _, c := range turn.Calls {
		input := c.Input
		if input == nil {
			input = map[string]any{}
		}
		content = append(content, map[string]any{"type": "tool_use", "id": s.nextID("toolu"), "name": c.Name, "input": input})
		stop = "tool_use"
	}
	if len(content) == 0 {
		content = append(content, map[string]any{"type": "text", "text": turn.Text})
	}
	usage := map[string]any{"input_tokens": len(req.Body) / 4, "output_tokens": 1}
	msg := map[string]any{"id": s.nextID("msg"), "type": "message", "role": "assistant", "model": req.Model,
		"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage}
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(msg)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	start := map[string]any{}
	for k, v := range msg {
		start[k] = v
	}
	start["content"], start["stop_reason"] = []any{}, nil
	sse(w, "message_start", map[string]any{"type": "message_start", "message": start})
	for i, block := range content {
		if block["type"] == "text" {
			sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": block["text"]}})
		} else {
			input, _ := json.Marshal(block["input"])
			sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": block["id"], "name": block["name"], "input": map[string]any{}}})
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
		}
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	sse(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 1}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}

// countTokens answers POST /v1/messages/count_tokens with a rough count.
func (s *Server) countTokens(w http.ResponseWriter, r *http.Request) {
	n := r.ContentLength / 4
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"input_tokens": max(n, 1)})
}
