package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
	"aipm/internal/failpoint"
	"aipm/wake"
)

// Server holds what every tool needs. It keeps no state of its own beyond a
// cached config, the ids of the sessions it opened, the answers in flight
// that hand them batches (links), and the credential it was started with:
// sessions, cursors and tasks are in the files.
type Server struct {
	store   *fsstore.Store
	log     *slog.Logger
	version string
	wake    *wake.Hub // one fsnotify watcher for every waiting call
	// purpose is the session purpose the process that started this server
	// asked for (AIPM_PURPOSE), used when authenticate names none.
	purpose string
	cred    *Credential // the agent credential aipm serve holds, if any
	// locked: the server acts for cred.Agent alone (aipm serve --http, where
	// the credential is the request's bearer token): authenticate refuses
	// another agent_id, the gate another agent's session_token.
	locked bool
	links  *links      // what the sessions were handed, and when it is read (links.go)
	mcp    *mcp.Server // built once for aipm serve --http (agentServer)
	// sdkTools makes MCP register the tools through the SDK's mcp.AddTool,
	// their schemas inferred from their Go types, instead of serving
	// schemas/ and running calls through typedHandler (see addTool).
	sdkTools bool
	// checkSchemas is EnvCheckSchemas: calls check what typedHandler skips.
	checkSchemas bool
	// unavailable is why this server cannot serve (Unavailable); empty
	// for a server of a project.
	unavailable string

	mu       sync.Mutex
	cfg      *fsstore.Config
	cfgStamp [2]int64 // mtime, size of the config the cache holds
	sessions []string // opened here: ended when the server exits
}

// New returns a server for store. It reads nothing yet but AIPM_PURPOSE,
// which `aipm watch` sets for the agents it starts, and AIPM_CHECK_SCHEMAS
// (EnvCheckSchemas), which the tests set.
func New(store *fsstore.Store, log *slog.Logger, version string) *Server {
	return &Server{store: store, log: log, version: version, wake: wake.New(), purpose: os.Getenv(fsstore.EnvPurpose),
		links: newLinks(store, log), checkSchemas: os.Getenv(EnvCheckSchemas) == "1"}
}

// Unavailable returns the server aipm serve runs when it cannot serve: no
// project found, or no credential where it was told to find one. A client
// shows a server that exits at once only as a closed connection, its reason
// lost on a stderr nobody reads; this one completes the handshake, lists
// every tool as New's does (the client's entry visibly works), and answers
// every tool call with the tool error server_unavailable: why, one sentence
// that says what is wrong and how to fix it, for the model to pass on.
func Unavailable(why string, log *slog.Logger, version string) *Server {
	return &Server{log: log, version: version, unavailable: why}
}

// opened records a session this server created.
func (s *Server) opened(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions = append(s.sessions, id)
}

// Credential is an agent's id and passkey, given to aipm serve by its
// environment so that the passkey never passes through the model (DESIGN
// section 5).
type Credential = fsstore.Credential

// HoldCredential makes authenticate(agent_id) without a passkey use c when
// agent_id is c.Agent.
func (s *Server) HoldCredential(c Credential) { s.cred = &c }

// instructions are the server instructions: what every tool shares, said
// once, so that no tool description repeats it (TestSize holds the tools'
// definitions to their size). They name authenticate and get_next_action,
// and, for a client that shows the model only the tools' names until it
// searches, the one search that loads every aipm tool: any answer may name
// any of them as the next call (TestToolSearchLoadsNamedTools). Claude
// Code's ToolSearch loads 5 tools a search unless max_results says more,
// Codex's tool_search 8 unless limit does; Codex shows the model only the
// instructions' first 247 characters until it searches, so the search
// comes first.
const instructions = `aipm coordinates the agents of this project. If your tools must be searched for before use, one search loads them all: query "+aipm", max_results (or limit) 40. Call authenticate(agent_id) first (add passkey only if it asks), then loop: get_next_action, do what its instruction says, get_next_action again, until it says exit.
Every other tool needs the session_token authenticate returns. Arguments left out: a conversation_id is your open conversation; a marker tool takes its text from after the marker, its task as your task in progress. Every answer carries a notification line: "notifications: none", or how many wait: then call get_notifications. A session is a task session (work on one task) or a chat session (messages, conversations); a tool whose description ends in (task) or (chat) works only in that kind. Chat command markers (@@タスク作成: and others) are explained by help. Lease files before you edit them; another's lease refuses your edit.`

// MCP builds the MCP server with every tool registered behind the gate.
func (s *Server) MCP() *mcp.Server {
	instr := instructions
	if s.unavailable != "" {
		instr = "This aipm server cannot serve: " + s.unavailable + "\n" + instr
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "aipm", Version: s.version}, &mcp.ServerOptions{Instructions: instr})
	for _, t := range tools() {
		tool := t.tool
		t.add(srv, s, &tool)
	}
	srv.AddReceivingMiddleware(slowStart(), s.gate())
	return srv
}

// failpointSlowStart is where a test slows aipm serve (the failpoint
// package): the handshake's first request (initialize, or server/discover
// from a client of MCP 2026-07-28) answered 3 s late, as on a loaded
// machine, for the tests that drive the real clients: a client that does
// not wait for its MCP servers starts its first turn without aipm's tools.
const failpointSlowStart = "slow-start"

// slowStart delays the first request this server receives at
// failpointSlowStart.
func slowStart() mcp.Middleware {
	var once sync.Once
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			once.Do(func() { failpoint.Delay(failpointSlowStart, 3*time.Second) })
			return next(ctx, method, req)
		}
	}
}

// Run serves MCP over t until the client disconnects or ctx ends; then the
// sessions it opened end (reason process_exited), so that their
// conversations end at once instead of at a timeout. While it runs, the
// store's task index follows edits in place through the server's one
// fsnotify watcher (fsstore.Store.WatchTasks).
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	if st, ok := t.(*stdio); ok {
		st.links = s.links // its calls are links (links.go)
	}
	if s.store != nil { // nil: Unavailable
		s.store.WatchTasks(s.wake)
		defer s.store.WatchTasks(nil)
	}
	err := s.MCP().Run(ctx, t)
	s.endOpened(context.WithoutCancel(ctx))
	return err
}

// endOpened ends the sessions this server opened (reason process_exited).
func (s *Server) endOpened(ctx context.Context) {
	s.mu.Lock()
	ids := s.sessions
	s.sessions = nil
	s.mu.Unlock()
	for _, id := range ids {
		// A session already swept away (ended, then removed) needs nothing.
		if _, endErr := s.store.EndSession(ctx, id, fsstore.EndExited); endErr != nil && !errors.Is(endErr, fsstore.ErrNotFound) {
			s.log.Warn("end session at exit", "session", id, "err", endErr)
		}
	}
}

// config returns the project's config, re-read when the file changed. Its
// error is the tool error config_invalid, ready to return.
func (s *Server) config() (*fsstore.Config, error) {
	cfg, err := s.loadConfig()
	if err != nil {
		return nil, toolErr("config_invalid", err.Error()+": ask a human to fix it (aipm doctor shows what is wrong)")
	}
	return cfg, nil
}

func (s *Server) loadConfig() (*fsstore.Config, error) {
	fi, err := os.Stat(s.store.ConfigPath())
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	stamp := [2]int64{fi.ModTime().UnixNano(), fi.Size()}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cfg != nil && stamp == s.cfgStamp {
		return s.cfg, nil
	}
	cfg, err := s.store.LoadConfig()
	if err == nil {
		err = fsstore.Adopt(s.cfg, cfg)
	}
	if err != nil {
		if s.cfg != nil {
			s.log.Warn("config is invalid; keeping the previous one", "err", err)
			return s.cfg, nil
		}
		return nil, err
	}
	for _, w := range fsstore.NewWarnings(s.cfg, cfg) {
		s.log.Warn("config: " + w.Error())
	}
	s.cfg, s.cfgStamp = cfg, stamp
	return cfg, nil
}

type sessionKey struct{}

func withSession(ctx context.Context, ses fsstore.Session) context.Context {
	return context.WithValue(ctx, sessionKey{}, ses)
}

// sessionFrom returns the caller's session, which the gate put in ctx. The
// caller's identity always comes from here, never from an argument.
func sessionFrom(ctx context.Context) fsstore.Session {
	ses, _ := ctx.Value(sessionKey{}).(fsstore.Session)
	return ses
}
