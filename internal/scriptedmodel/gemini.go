package scriptedmodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// readGenerateContent reads a Gemini API request (generateContent and
// streamGenerateContent share one body): its system instruction and
// contents, whose functionResponse parts are the tool results, and its
// tools' function declarations (schema under parametersJsonSchema, or the
// older parameters). The model is in the URL, not the body.
func readGenerateContent(body []byte) (*Request, bool, error) {
	var in struct {
		SystemInstruction any              `json:"systemInstruction"`
		Contents          []map[string]any `json:"contents"`
		Tools             []struct {
			FunctionDeclarations []map[string]any `json:"functionDeclarations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, false, err
	}
	req := &Request{}
	var text strings.Builder
	geminiTexts(&text, in.SystemInstruction)
	for _, c := range in.Contents {
		parts, _ := c["parts"].([]any)
		for _, p := range parts {
			part := object(p)
			if fr := object(part["functionResponse"]); fr != nil {
				b, _ := json.Marshal(fr["response"])
				id := str(fr["id"])
				if id == "" {
					id = str(fr["name"])
				}
				req.Results = append(req.Results, Result{CallID: id, Text: string(b)})
				text.Write(b)
				text.WriteByte('\n')
				continue
			}
			geminiTexts(&text, part)
		}
	}
	req.Text = text.String()
	for _, t := range in.Tools {
		for _, d := range t.FunctionDeclarations {
			params := object(d["parametersJsonSchema"])
			if params == nil {
				params = object(d["parameters"])
			}
			req.Tools = append(req.Tools, Tool{Name: str(d["name"]), Description: str(d["description"]), Parameters: params, Definition: definition(d)})
		}
	}
	return req, false, nil
}

// geminiTexts collects the text parts under v (a content or part) into b.
func geminiTexts(b *strings.Builder, v any) {
	switch v := v.(type) {
	case string:
		b.WriteString(v + "\n")
	case []any:
		for _, e := range v {
			geminiTexts(b, e)
		}
	case map[string]any:
		if t, ok := v["text"].(string); ok {
			b.WriteString(t + "\n")
		}
		geminiTexts(b, v["parts"])
	}
}

// models answers POST /v1beta/models/MODEL:METHOD, the Gemini API's
// generateContent, streamGenerateContent (server-sent events with
// ?alt=sse) and countTokens.
func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	model, method, ok := strings.Cut(r.PathValue("call"), ":")
	switch {
	case ok && method == "countTokens":
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"totalTokens": max(r.ContentLength/4, 1)})
		return
	case !ok || method != "generateContent" && method != "streamGenerateContent":
		s.notFound(w, r)
		return
	}
	read := func(body []byte) (*Request, bool, error) {
		req, stream, err := readGenerateContent(body)
		if req != nil {
			req.Model = model
		}
		return req, stream, err
	}
	req, turn, _, ok := s.record(w, r, Gemini, read)
	if !ok {
		return
	}
	var parts []map[string]any
	for _, c := range turn.Calls {
		input := c.Input
		if input == nil {
			input = map[string]any{}
		}
		parts = append(parts, map[string]any{"functionCall": map[string]any{"id": s.nextID("call"), "name": c.Name, "args": input}})
	}
	if len(parts) == 0 {
		parts = append(parts, map[string]any{"text": turn.Text})
	}
	resp := map[string]any{
		"candidates": []any{map[string]any{"index": 0, "finishReason": "STOP",
			"content": map[string]any{"role": "model", "parts": parts}}},
		"usageMetadata": map[string]any{"promptTokenCount": len(req.Body) / 4, "candidatesTokenCount": 1, "totalTokenCount": len(req.Body)/4 + 1},
		"modelVersion":  model,
		"responseId":    s.nextID("resp"),
	}
	if method == "generateContent" {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	b, _ := json.Marshal(resp)
	fmt.Fprintf(w, "data: %s\r\n\r\n", b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
