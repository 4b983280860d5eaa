package scriptedmodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// readChatCompletions reads a Chat Completions request: its messages
// (the tool role's are the tool results) and its function tools.
func readChatCompletions(body []byte) (*Request, bool, error) {
	var in struct {
		Model    string           `json:"model"`
		Messages []map[string]any `json:"messages"`
		Tools    []struct {
			Type     string         `json:"type"`
			Function map[string]any `json:"function"`
		} `json:"tools"`
		Stream bool `json:"stream"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, false, err
	}
	req := &Request{Model: in.Model}
	var text strings.Builder
	for _, m := range in.Messages {
		if str(m["role"]) == "tool" {
			var result strings.Builder
			texts(&result, m["content"])
			req.Results = append(req.Results, Result{CallID: str(m["tool_call_id"]), Text: result.String()})
			text.WriteString(result.String())
			continue
		}
		texts(&text, m["content"])
	}
	req.Text = text.String()
	for _, t := range in.Tools {
		if t.Type != "function" {
			continue
		}
		f := t.Function
		req.Tools = append(req.Tools, Tool{Name: str(f["name"]), Description: str(f["description"]),
			Parameters: object(f["parameters"]), Definition: definition(map[string]any{"type": t.Type, "function": f})})
	}
	return req, in.Stream, nil
}

// chatCompletions answers POST /v1/chat/completions, streamed (chunks of
// server-sent data lines, then [DONE]) or whole.
func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	req, turn, stream, ok := s.record(w, r, ChatCompletions, readChatCompletions)
	if !ok {
		return
	}
	var calls []map[string]any
	for i, c := range turn.Calls {
		input := c.Input
		if input == nil {
			input = map[string]any{}
		}
		args, _ := json.Marshal(input)
		calls = append(calls, map[string]any{"index": i, "id": s.nextID("call"), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": string(args)}})
	}
	message := map[string]any{"role": "assistant", "content": turn.Text}
	finish := "stop"
	if len(calls) > 0 {
		message["content"], message["tool_calls"], finish = nil, calls, "tool_calls"
	}
	id, created := s.nextID("chatcmpl"), time.Now().Unix()
	usage := map[string]any{"prompt_tokens": len(req.Body) / 4, "completion_tokens": 1, "total_tokens": len(req.Body)/4 + 1}
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "chat.completion", "created": created, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": message, "finish_reason": finish}}, "usage": usage})
		return
	}
	chunk := func(delta map[string]any, finish any, usage any) {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if usage != nil {
			c["usage"] = usage
		}
		b, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	if len(calls) > 0 {
		chunk(map[string]any{"role": "assistant", "tool_calls": calls}, nil, nil)
	} else {
		chunk(map[string]any{"role": "assistant", "content": turn.Text}, nil, nil)
	}
	chunk(map[string]any{}, finish, usage)
	fmt.Fprint(w, "data: [DONE]\n\n")
}
