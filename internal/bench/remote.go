package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
	"aipm/internal/sshtest"
)

// A link is one way an agent's client reaches aipm serve on the home
// machine (DESIGN section 17): the local stdio of P1 and P2, ssh carrying
// that stdio, or MCP's streamable HTTP. P10 measures P1 and P2 over each
// remote link beside the local one, in the same run.
type link interface {
	name() string
	// connect opens a client session to a server of store's project for
	// agent; the server's log (debug level) goes to stderr where the link
	// has one server per agent. cmd is the server's process, or the
	// process that reaches it (ssh).
	connect(store *fsstore.Store, agent, passkey string, stderr io.Writer) (cs *mcp.ClientSession, cmd *exec.Cmd, err error)
	// holdsCredential says the link proves the agent's identity itself
	// (HTTP's bearer token): authenticate then takes no passkey.
	holdsCredential() bool
	// processPerSession says each session is a process of its own, whose
	// exit ends the session (stdio): serveOver watches it.
	processPerSession() bool
	close()
}

func newClient() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "aipm-bench", Version: "1"}, nil)
}

// stdioLink starts one aipm serve per agent, through argv (the command
// that runs aipm on the home machine: the aipm measured, or ssh to it).
type stdioLink struct {
	ctx   context.Context
	label string
	argv  func(dir string) []string
	done  func() // stops what the link started (sshd), if anything
}

func (l *stdioLink) name() string            { return l.label }
func (l *stdioLink) holdsCredential() bool   { return false }
func (l *stdioLink) processPerSession() bool { return true }
func (l *stdioLink) close() {
	if l.done != nil {
		l.done()
	}
}

func (l *stdioLink) connect(store *fsstore.Store, agent, passkey string, stderr io.Writer) (*mcp.ClientSession, *exec.Cmd, error) {
	argv := l.argv(store.ProjectDir())
	cmd := groupCommand(l.ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "AIPM_LOG=debug")
	cmd.Stderr = stderr
	cs, err := newClient().Connect(l.ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("start aipm serve (%s): %w", l.label, err)
	}
	return cs, cmd, nil
}

// localLink is P1's and P2's own: aipm serve a child of the client.
func (b *bench) localLink() link {
	return &stdioLink{ctx: b.ctx, label: "local", argv: func(dir string) []string {
		return []string{b.aipm, "--dir", dir, "serve"}
	}}
}

// httpLink is one `aipm serve --http 127.0.0.1:0` for the project, each
// agent its own client with its passkey as the bearer token.
type httpLink struct {
	ctx     context.Context
	cmd     *exec.Cmd
	url     string
	closing atomic.Bool   // close was called: the exit is no failure
	exited  chan struct{} // closed when the server has exited (watchHTTP)
}

// startHTTP starts the project's HTTP server; its log goes to stderr. Its
// exit before close ends the target's context (watchHTTP).
func (b *bench) startHTTP(store *fsstore.Store, stderr io.Writer) (*httpLink, error) {
	cmd := b.command(b.aipm, "--dir", store.ProjectDir(), "serve", "--http", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "AIPM_LOG=debug")
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start aipm serve --http: %w", err)
	}
	l := &httpLink{ctx: b.ctx, cmd: cmd, exited: make(chan struct{})}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	l.url = strings.TrimSpace(line)
	b.watchHTTP(l) // after the read: Wait closes stdout
	if err != nil || !strings.HasPrefix(l.url, "http://") {
		l.close()
		return nil, fmt.Errorf("aipm serve --http printed %q, not its URL: %v", line, err)
	}
	go io.Copy(io.Discard, stdout)
	return l, nil
}

func (l *httpLink) name() string            { return "http" }
func (l *httpLink) holdsCredential() bool   { return true }
func (l *httpLink) processPerSession() bool { return false }

func (l *httpLink) close() {
	l.closing.Store(true)
	l.cmd.Process.Signal(os.Interrupt)
	select {
	case <-l.exited:
	case <-time.After(5 * time.Second):
		l.cmd.Cancel() // the process group
		<-l.exited
	}
}

func (l *httpLink) connect(_ *fsstore.Store, agent, passkey string, _ io.Writer) (*mcp.ClientSession, *exec.Cmd, error) {
	// A client of its own, as each agent is: its calls, one at a time, go
	// on its own kept-alive connection, so each proves the answer before
	// it was read (mcpserver/links.go).
	client := &http.Client{Transport: bearer{token: passkey, base: http.DefaultTransport.(*http.Transport).Clone()}}
	cs, err := newClient().Connect(l.ctx, &mcp.StreamableClientTransport{Endpoint: l.url, HTTPClient: client}, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s as %s: %w", l.url, agent, err)
	}
	return cs, l.cmd, nil
}

// bearer adds the agent's passkey to every request as its bearer token.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (t bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+t.token)
	return t.base.RoundTrip(req)
}

// remoteLinks are P10's links for project p (named name-ssh, name-http):
// each a fresh project with the given agents, and the stderr of its
// servers (HTTP has one for them all). A link that cannot run here (no
// sshd) is left out with the reason.
type remoteProject struct {
	link  link
	store *fsstore.Store
	keys  map[string]string
}

func (b *bench) remoteProjects(name string, stderr io.Writer, agents ...string) ([]remoteProject, map[string]string, error) {
	var out []remoteProject
	missing := map[string]string{}
	local, localKeys, err := b.project(name+"-local", agents...)
	if err != nil {
		return nil, nil, err
	}
	out = append(out, remoteProject{link: b.localLink(), store: local, keys: localKeys})
	sshStore, sshKeys, err := b.project(name+"-ssh", agents...)
	if err != nil {
		return nil, nil, err
	}
	if l, why, err := b.sshLink(name); err != nil {
		return nil, nil, err
	} else if l == nil {
		missing["ssh"] = why
	} else {
		out = append(out, remoteProject{link: l, store: sshStore, keys: sshKeys})
	}
	httpStore, httpKeys, err := b.project(name+"-http", agents...)
	if err != nil {
		return nil, nil, err
	}
	hl, err := b.startHTTP(httpStore, stderr)
	if err != nil {
		return nil, nil, err
	}
	out = append(out, remoteProject{link: hl, store: httpStore, keys: httpKeys})
	return out, missing, nil
}

// serveOver is serve through l; a server that is a process of its own
// is watched (b.watch).
func (b *bench) serveOver(l link, store *fsstore.Store, agent, passkey string, stderr io.Writer) (*server, error) {
	b.doing.set(fmt.Sprintf("starting aipm serve of %s (%s)", agent, l.name()))
	cs, cmd, err := l.connect(store, agent, passkey, stderr)
	if err != nil {
		return nil, err
	}
	if err := store.Triggers().Write(b.ctx, fsstore.Trigger{Agent: agent, Purpose: fsstore.PurposeChat, Reason: "bench"}); err != nil {
		cs.Close()
		return nil, err
	}
	args := map[string]any{"agent_id": agent}
	if !l.holdsCredential() {
		args["passkey"] = passkey
	}
	var out struct {
		SessionToken string `json:"session_token"`
	}
	if err := callTool(b.ctx, cs, "authenticate", args, &out); err != nil {
		cs.Close()
		return nil, fmt.Errorf("%s: %w", l.name(), err)
	}
	s := &server{cs: cs, cmd: cmd, token: out.SessionToken, agent: agent, passkey: passkey}
	if l.processPerSession() {
		b.watch(s, l.name())
	}
	return s, nil
}

// remoteDelivery is P10's P1 rows: the delivery of P1 over ssh and over
// HTTP, each sample beside one local sample, in turn.
func (b *bench) remoteDelivery() ([]Row, error) {
	b.progress("P10: %d deliveries over each link (local, ssh, http), in turn", b.deliveries)
	type pair struct {
		name    string
		sa, sb  *server
		waiting *lineCounter
		lat     []time.Duration
	}
	httpWaiting := newLineCounter("msg=waiting")
	projects, missing, err := b.remoteProjects("p10-1", httpWaiting, "a", "b")
	if err != nil {
		return nil, err
	}
	var pairs []*pair
	for _, p := range projects {
		defer p.link.close()
		waiting := newLineCounter("msg=waiting")
		if p.link.holdsCredential() {
			waiting = httpWaiting
		}
		sa, err := b.serveOver(p.link, p.store, "a", p.keys["a"], io.Discard)
		if err != nil {
			return nil, err
		}
		defer sa.close()
		sb, err := b.serveOver(p.link, p.store, "b", p.keys["b"], waiting)
		if err != nil {
			return nil, err
		}
		defer sb.close()
		pairs = append(pairs, &pair{name: p.link.name(), sa: sa, sb: sb, waiting: waiting})
	}
	for i := 0; i < b.deliveries; i++ {
		for _, p := range pairs {
			sent, _, err := b.wake(p.sb, p.waiting, "get_pending_messages", func() error {
				return p.sa.call(b.ctx, "send_message", map[string]any{"target_agent_id": "b", "content": "ping " + strconv.Itoa(i)}, nil)
			})
			if err != nil {
				return nil, fmt.Errorf("P10 over %s: %w", p.name, err)
			}
			p.lat = append(p.lat, sent)
			if err := p.sb.call(b.ctx, "get_pending_messages", map[string]any{}, nil); err != nil {
				return nil, fmt.Errorf("P10 over %s: %w", p.name, err)
			}
		}
	}
	local := pairs[0].lat
	slices.Sort(local)
	var rows []Row
	for _, p := range pairs[1:] {
		slices.Sort(p.lat)
		over := percentile(p.lat, 99) - percentile(local, 99)
		rows = append(rows, Row{
			id: "P10" + p.name[:1] + "1", what: fmt.Sprintf("P1 over %s: send issued -> receiver returns, p50/p99, %d samples", p.name, len(p.lat)),
			aipm:     ms(percentile(p.lat, 50)) + " / " + ms(percentile(p.lat, 99)),
			floor:    "local " + ms(percentile(local, 50)) + " / " + ms(percentile(local, 99)),
			compared: "p99 " + signedMs(over), target: "p99 <= local + 1 ms",
			aipmValues: latencies(p.lat), floorValues: latencies(local),
		}.judged(atMost("p99 - local p99", msOf(over), 1, "ms")))
	}
	return append(rows, missingLinks(missing, "1", "P1")...), nil
}

// missingLinks are the rows of links that could not run here.
func missingLinks(missing map[string]string, suffix, what string) []Row {
	var rows []Row
	for name, why := range missing {
		rows = append(rows, Row{id: "P10" + name[:1] + suffix, what: what + " over " + name + ": " + why, aipm: "-", floor: "-", compared: "-", target: "measured", met: false})
	}
	return rows
}

// remoteThroughput is P10's P2 rows: P2's eight senders over ssh and over
// HTTP, in rounds alternating with the local eight.
func (b *bench) remoteThroughput() ([]Row, error) {
	const n = 8
	b.progress("P10: %d servers x %d send_message over each link (local, ssh, http), in rounds", n, b.sends)
	agents := senders(n)
	projects, missing, err := b.remoteProjects("p10-2", io.Discard, agents...)
	if err != nil {
		return nil, err
	}
	servers := make([][]*server, len(projects))
	for j, p := range projects {
		defer p.link.close()
		for _, a := range agents {
			s, err := b.serveOver(p.link, p.store, a, p.keys[a], io.Discard)
			if err != nil {
				return nil, err
			}
			defer s.close()
			servers[j] = append(servers[j], s)
		}
	}
	const rounds = 4
	per := max(b.sends/rounds, 1)
	took := make([]time.Duration, len(projects))
	for r := 0; r < rounds; r++ {
		for j := range projects {
			start := time.Now()
			if err := b.sendAll(servers[j], agents, per); err != nil {
				return nil, fmt.Errorf("P10 over %s: %w", projects[j].link.name(), err)
			}
			took[j] += time.Since(start)
		}
	}
	rate := func(j int) float64 { return float64(n*per*rounds) / took[j].Seconds() }
	var rows []Row
	for j := 1; j < len(projects); j++ {
		name := projects[j].link.name()
		ratio := rate(j) / rate(0)
		rows = append(rows, Row{
			id: "P10" + name[:1] + "2", what: fmt.Sprintf("P2 over %s: send_message throughput, 8 servers, fsync, %d sends", name, n*per*rounds),
			aipm: fmt.Sprintf("%.0f msg/s", rate(j)), floor: fmt.Sprintf("local %.0f msg/s", rate(0)),
			compared: fmt.Sprintf("%.0f%% of local", 100*ratio), target: ">= 50% of local",
			aipmValues: throughputOf(rate(j)), floorValues: throughputOf(rate(0)),
		}.judged(atLeast("aipm / local", ratio, 0.5, "x")))
	}
	return append(rows, missingLinks(missing, "2", "P2")...), nil
}

// sendAll has every server send per messages to the next agent, all at once.
func (b *bench) sendAll(servers []*server, agents []string, per int) error {
	b.doing.set(fmt.Sprintf("%d servers sending %d messages each", len(servers), per))
	errc := make(chan error, len(servers))
	for i, s := range servers {
		go func() {
			for k := 0; k < per; k++ {
				if err := s.call(b.ctx, "send_message", map[string]any{"target_agent_id": agents[(i+1)%len(agents)], "content": "load " + strconv.Itoa(k)}, nil); err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
	}
	var first error
	for range servers {
		if err := <-errc; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// sshLink reaches aipm serve through a loopback sshd started for the
// run, with keys it generates (internal/sshtest): ssh -T home aipm serve,
// one ssh and one sshd session per agent. Without sshd it returns the
// reason instead.
func (b *bench) sshLink(name string) (link, string, error) {
	if why := sshtest.Missing(); why != "" {
		return nil, why, nil
	}
	srv, err := sshtest.Start(b.ctx, filepath.Join(b.root, name+"-sshd"))
	if err != nil {
		return nil, "", err
	}
	context.AfterFunc(b.ctx, func() { srv.Close() }) // sshd is no child of the target's context: its end stops it too
	return &stdioLink{ctx: b.ctx, label: "ssh", argv: func(dir string) []string {
		return srv.Command("home", "env", "AIPM_LOG=debug", b.aipm, "--dir", dir, "serve")
	}, done: func() { srv.Close() }}, "", nil
}
