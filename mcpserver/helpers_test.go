package mcpserver_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
	"aipm/internal/helperproc"
	"aipm/internal/testenv"
	"aipm/mcpserver"
)

// aipmBin is the aipm binary built once for the tests that drive it as a
// real MCP server over stdio.
var aipmBin string

func TestMain(m *testing.M) {
	if helperproc.Role() != "" {
		helperproc.Main(m, playHelper) // exits
	}
	// Every server of these tests, in process or aipm serve, checks what
	// its calls' fast path skips (toolcall.go).
	os.Setenv(mcpserver.EnvCheckSchemas, "1")
	dir, err := os.MkdirTemp("", "aipm-bin-*")
	if err != nil {
		panic(err)
	}
	aipmBin = filepath.Join(dir, "aipm")
	build := exec.Command("go", append(append([]string{"build"}, testenv.GoBuildFlags()...), "-o", aipmBin, "../cmd/aipm")...)
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build aipm:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// project is a test project with a human lead and two AI agents.
type project struct {
	t        testing.TB
	store    *fsstore.Store
	cfg      *fsstore.Config
	passkeys map[string]string
}

func newProject(t testing.TB) *project {
	t.Helper()
	store, err := fsstore.Init(t.TempDir(), "test")
	if err != nil {
		t.Fatal(err)
	}
	p := &project{t: t, store: store, passkeys: map[string]string{}}
	for _, a := range []fsstore.NewAgent{
		{ID: "lead", Type: fsstore.AgentHuman, Role: fsstore.RoleManager},
		{ID: "coder", Type: fsstore.AgentAI, Parent: "lead"},
		{ID: "reviewer", Type: fsstore.AgentAI, Parent: "lead"},
	} {
		key, err := store.AddAgent(context.Background(), a)
		if err != nil {
			t.Fatal(err)
		}
		p.passkeys[a.ID] = key
	}
	if p.cfg, err = store.LoadConfig(); err != nil {
		t.Fatal(err)
	}
	return p
}

// taskInProgress creates a task for agent and starts it.
func (p *project) taskInProgress(agent, title string) fsstore.Task {
	p.t.Helper()
	t, err := p.store.CreateTask(context.Background(), p.cfg, fsstore.NewTask{Title: title, Assignee: agent, Requester: "lead", Status: fsstore.StatusInProgress})
	if err != nil {
		p.t.Fatal(err)
	}
	return t
}

// connectInProcess connects an SDK client to srv over in-memory
// transports; both ends close when the test ends.
func connectInProcess(t testing.TB, srv *mcp.Server) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "aipm-test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// connect starts `aipm serve` for the project and connects an SDK client.
func (p *project) connect(protocol string) *mcp.ClientSession {
	return p.connectWith(protocol, nil, os.Stderr)
}

// connectWith is connect with extra environment and the server's stderr.
func (p *project) connectWith(protocol string, env []string, stderr io.Writer) *mcp.ClientSession {
	p.t.Helper()
	return p.connectClient(mcp.NewClient(&mcp.Implementation{Name: "aipm-test", Version: "1"}, nil), protocol, env, stderr)
}

// connectClient starts `aipm serve` for the project and connects client.
func (p *project) connectClient(client *mcp.Client, protocol string, env []string, stderr io.Writer) *mcp.ClientSession {
	p.t.Helper()
	cmd := exec.Command(aipmBin, "--dir", p.store.ProjectDir(), "serve")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		p.t.Fatalf("connect (protocol %s): %v", protocol, err)
	}
	p.t.Cleanup(func() { cs.Close() })
	return cs
}

// lineWatch is a writer (a server's stderr) that closes seen when a line
// containing want is written.
type lineWatch struct {
	want string
	seen chan struct{}
	once sync.Once
	buf  []byte
	mu   sync.Mutex
}

func (w *lineWatch) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	if strings.Contains(string(w.buf), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(b), nil
}

// result is a decoded tool result.
type result struct {
	isError bool
	text    string         // all text content, joined by newlines
	data    map[string]any // structured content
}

func (r result) str(key string) string {
	v, _ := r.data[key].(string)
	return v
}

// code is the error code at the start of an error result's text.
func (r result) code() string {
	if !r.isError {
		return ""
	}
	code, _, _ := strings.Cut(r.text, ":")
	return code
}

func call(t testing.TB, cs *mcp.ClientSession, tool string, args map[string]any) result {
	t.Helper()
	r, err := tryCall(cs, tool, args)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// tryCall is call for a goroutine other than the test's: a protocol error
// is returned.
func tryCall(cs *mcp.ClientSession, tool string, args map[string]any) (result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return result{}, fmt.Errorf("%s: protocol error: %w", tool, err)
	}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	r := result{isError: res.IsError, text: strings.Join(texts, "\n")}
	if res.StructuredContent != nil {
		data, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(data, &r.data)
	}
	return r, nil
}

// authenticate opens a session of the given purpose by writing the trigger
// the watcher would write and asking for that purpose, as a started agent
// does (AIPM_PURPOSE), and returns its token.
func (p *project) authenticate(cs *mcp.ClientSession, agent, purpose string) string {
	p.t.Helper()
	if err := p.store.Triggers().Write(context.Background(), fsstore.Trigger{Agent: agent, Purpose: purpose, Reason: "test"}); err != nil {
		p.t.Fatal(err)
	}
	r := call(p.t, cs, "authenticate", map[string]any{"agent_id": agent, "passkey": p.passkeys[agent], "purpose": purpose})
	if r.isError || r.str("purpose") != purpose {
		p.t.Fatalf("authenticate %s for %s: %s", agent, purpose, r.text)
	}
	return r.str("session_token")
}

// lastSeenAt matches a session's sliding expiry, which any call may move.
var lastSeenAt = regexp.MustCompile(`"lastSeenAt": *"[^"]*",?`)

// tree is a digest of every file under .ai-pm (lock files aside, the
// failed-authenticate and wrong-bearer-token counts, the one thing a
// refused call must write, and the sessions' sliding expiry), to prove
// that a refused call changed nothing.
func (p *project) tree() string {
	var lines []string
	root := p.store.Root()
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() == ".lock" || d.Name() == "auth.json" || d.Name() == "bearer.json" || d.Name() == "bearer.lock" {
			return nil
		}
		entry := strings.TrimPrefix(path, root)
		if !d.IsDir() {
			data, _ := os.ReadFile(path)
			// A call may slide its session's expiry (lastSeenAt, at most every
			// 30 s): that is the session's, not a change the call made.
			data = lastSeenAt.ReplaceAll(data, nil)
			entry += fmt.Sprintf(" %x", sha256.Sum256(data))
		}
		lines = append(lines, entry)
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// send writes a chat message from one agent to another, as the CLI does.
func (p *project) send(from, to, content string) {
	p.t.Helper()
	if _, err := p.store.Send(context.Background(), p.cfg, fsstore.OutgoingMessage{From: from, To: to, Content: content}); err != nil {
		p.t.Fatal(err)
	}
}

// envInt is the integer in the environment variable name, or def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// readDoc decodes the JSON document at path, as a person inspecting the
// project would read it.
func readDoc(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// doc reads the document of collection with id into v.
func (p *project) doc(t testing.TB, collection, id string, v any) {
	t.Helper()
	path, err := p.store.DocPath(collection, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := readDoc(path, v); err != nil {
		t.Fatal(err)
	}
}
