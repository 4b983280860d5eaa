// Package scriptedmodel is a model endpoint on loopback for the tests that
// drive the real agent CLIs (Claude Code, Codex, Gemini CLI, OpenCode, ...)
// and for the bench: it speaks the four wire formats they use, the
// Anthropic Messages API (POST /v1/messages, streamed as server-sent
// events, and count_tokens), the OpenAI Responses API (POST /v1/responses,
// streamed), OpenAI's Chat Completions (POST /v1/chat/completions,
// streamed) and the Gemini API (POST
// /v1beta/models/MODEL:streamGenerateContent, generateContent and
// countTokens), records every request, and answers each from a script: a
// Go function given the request (what the client offers the model, the
// tool results so far) returns the model's next turn, text or tool calls.
//
// A request to any other path is answered 404 and recorded (Unknown), so a
// test sees what else a client asked for.
package scriptedmodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
)

// API is the wire format of a request.
type API string

// The wire formats the server speaks.
const (
	Anthropic API = "anthropic" // Messages API: Claude Code
	OpenAI    API = "openai"    // Responses API: Codex
	Gemini    API = "gemini"    // Gemini API (generateContent): Gemini CLI
	// ChatCompletions is OpenAI's Chat Completions API: OpenCode (through
	// an OpenAI-compatible provider).
	ChatCompletions API = "chat"
)

// Tool is a tool the model can call in a request: its name as the model
// calls it, and for a tool in a namespace (Codex's MCP servers) that
// namespace. Search is set on the client's own tool search (Claude Code's
// ToolSearch, Codex's tool_search).
type Tool struct {
	Namespace   string
	Name        string
	Description string
	Parameters  map[string]any // the input schema
	Search      bool
	// Custom is a tool whose input is free text, not JSON (Codex's
	// apply_patch): a call of it gives Call.Raw.
	Custom bool
	// Definition is the tool's definition as the client sent it, compact
	// JSON: what the model reads of it (DESIGN 13, P11).
	Definition json.RawMessage
}

// Result is a tool's result as the client sent it back to the model.
type Result struct {
	CallID string
	Text   string // its text; for a tool search the names it loaded
}

// Request is one model request, as the server read it.
type Request struct {
	API   API
	Model string
	// Tools are the tools the model can call in this request: those
	// offered in full, and those a tool search has loaded.
	Tools []Tool
	// Text is every text of the request the model reads but the tools'
	// definitions: system prompt, instructions, messages, tool results.
	Text    string
	Results []Result // the tool results of the conversation, in order
	// Namespaces are the definitions of the namespaces of tools the
	// request offers (Codex's MCP servers), as the client sent them.
	Namespaces map[string]json.RawMessage
	Body       json.RawMessage
}

// Tool returns the tool of r named name (in namespace ns, "" for none).
func (r *Request) Tool(ns, name string) (Tool, bool) {
	for _, t := range r.Tools {
		if t.Namespace == ns && t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// SearchTool returns the client's tool search, if r offers one.
func (r *Request) SearchTool() (Tool, bool) {
	for _, t := range r.Tools {
		if t.Search {
			return t, true
		}
	}
	return Tool{}, false
}

// Call is a tool call the model makes.
type Call struct {
	Namespace string
	Name      string
	Input     map[string]any
	Search    bool   // a call of the client's tool search (Tool.Search)
	Raw       string // the input of a custom tool (Tool.Custom), instead of Input
}

// Turn is the model's answer to a request: tool calls, else text.
type Turn struct {
	Text  string
	Calls []Call
}

// Script answers a request with the model's next turn.
type Script func(*Request) Turn

// Server is a scripted model on loopback.
type Server struct {
	URL    string // http://127.0.0.1:PORT, without /v1
	script Script
	srv    *http.Server

	mu       sync.Mutex
	requests []*Request
	unknown  []string
	calls    int
}

// Start starts a server that answers with script; Close stops it.
func Start(script Script) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("scriptedmodel: listen on loopback: %w", err)
	}
	s := &Server{URL: "http://" + ln.Addr().String(), script: script}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", s.messages)
	mux.HandleFunc("POST /v1/messages/count_tokens", s.countTokens)
	mux.HandleFunc("POST /v1/responses", s.responses)
	mux.HandleFunc("POST /v1/chat/completions", s.chatCompletions)
	mux.HandleFunc("POST /v1beta/models/{call}", s.models)
	mux.HandleFunc("/", s.notFound)
	s.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodConnect { // the mux routes no CONNECT
			s.notFound(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// Requests are the model requests so far, in the order they arrived.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

// Unknown are the requests the server does not serve, answered 404: "GET
// /v1/models", or, from a client whose HTTPS_PROXY is the server (so that
// nothing it sends leaves the machine), "CONNECT host:443".
func (s *Server) Unknown() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.unknown...)
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	target := r.URL.Path
	if r.Method == http.MethodConnect || r.URL.Host != "" {
		target = r.Host + r.URL.Path // a proxy's request: where the client meant to go
	}
	s.mu.Lock()
	s.unknown = append(s.unknown, r.Method+" "+target)
	s.mu.Unlock()
	http.Error(w, "scriptedmodel serves POST /v1/messages, /v1/messages/count_tokens, /v1/responses, /v1/chat/completions and /v1beta/models/MODEL:streamGenerateContent, not "+r.Method+" "+target, http.StatusNotFound)
}

// record reads a request's body with read, keeps it and asks the script.
func (s *Server) record(w http.ResponseWriter, r *http.Request, api API, read func([]byte) (*Request, bool, error)) (*Request, Turn, bool, bool) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil, Turn{}, false, false
	}
	req, stream, err := read(body)
	if err != nil {
		http.Error(w, fmt.Sprintf("scriptedmodel: not a %s request: %v", api, err), http.StatusBadRequest)
		return nil, Turn{}, false, false
	}
	req.API, req.Body = api, body
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	return req, s.script(req), stream, true
}

// nextID numbers the ids of the server's answers (messages, calls).
func (s *Server) nextID(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	return fmt.Sprintf("%s_%04d", prefix, s.calls)
}

// sse writes one server-sent event.
func sse(w http.ResponseWriter, event string, data any) {
	b, _ := json.Marshal(data)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// texts collects every string under v, in order, into b.
func texts(b *strings.Builder, v any) {
	switch v := v.(type) {
	case string:
		b.WriteString(v)
		b.WriteByte('\n')
	case []any:
		for _, e := range v {
			texts(b, e)
		}
	case map[string]any:
		for _, k := range []string{"text", "content", "output", "description", "name"} {
			if e, ok := v[k]; ok {
				texts(b, e)
			}
		}
	}
}

// definition is a tool's definition v as compact JSON, written as the
// clients write it (no HTML escaping), for Tool.Definition.
func definition(v any) json.RawMessage {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return nil
	}
	return json.RawMessage(strings.TrimSuffix(b.String(), "\n"))
}

// object is v as a JSON object, or nil.
func object(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// str is v as a string, or "".
func str(v any) string {
	s, _ := v.(string)
	return s
}
