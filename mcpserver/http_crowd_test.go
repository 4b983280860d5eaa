package mcpserver_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"aipm/fsstore"
	"aipm/internal/helperproc"
	"aipm/mcpserver"
)

// helpCall is a whole tool call that needs no MCP session: help, at the
// sessionless revision (2026-07-28), every request a call of its own.
const helpCall = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"help","arguments":{},"_meta":{` +
	`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},` +
	`"io.modelcontextprotocol/clientCapabilities":{}}}}`

// callHelp calls help through client as the agent whose passkey token is;
// nil when it was answered.
func callHelp(client *http.Client, url, token string) error {
	return callHelpAfter(client, url, token, nil)
}

// callHelpAfter is callHelp with the call's body sent once gate is
// closed (nil: at once): its connection is open and held meanwhile.
func callHelpAfter(client *http.Client, url, token string, gate <-chan struct{}) error {
	var body io.Reader = strings.NewReader(helpCall)
	if gate != nil {
		body = &gatedReader{gate: gate, r: body}
	}
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		return err
	}
	req.ContentLength = int64(len(helpCall))
	for k, v := range map[string]string{
		"Authorization": "Bearer " + token, "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "help",
	} {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("read the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(data), `"result"`) {
		return fmt.Errorf("answered %d %.200s", resp.StatusCode, data)
	}
	return nil
}

// gatedReader reads r once gate is closed.
type gatedReader struct {
	gate <-chan struct{}
	r    io.Reader
}

func (g *gatedReader) Read(b []byte) (int, error) {
	<-g.gate
	return g.r.Read(b)
}

// localClient is an HTTP client that connects from the loopback address
// local and keeps up to pool connections (0: a new connection per call),
// each call bounded by a hang guard; dials counts the connections it
// opened.
func localClient(local string, pool int, dials *atomic.Int64) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err == nil && dials != nil {
				dials.Add(1)
			}
			return c, err
		},
		MaxConnsPerHost: pool, MaxIdleConnsPerHost: pool, DisableKeepAlives: pool == 0,
		IdleConnTimeout: time.Minute,
	}
	return &http.Client{Transport: tr, Timeout: 60 * time.Second}
}

// addAgents adds n AI agents to p (agent1, agent2, ...) and returns
// their passkeys.
func (p *project) addAgents(n int) []string {
	p.t.Helper()
	var keys []string
	for i := range n {
		key, err := p.store.AddAgent(context.Background(), fsstore.NewAgent{ID: fmt.Sprintf("agent%d", i+1), Type: fsstore.AgentAI, Parent: "lead"})
		if err != nil {
			p.t.Fatal(err)
		}
		keys = append(keys, key)
	}
	return keys
}

// holdHalfOpen starts a process that keeps n connections from each
// loopback address of addrs open to url's server, each having sent half
// of a request's headers, and opens a new one as soon as the server closes
// one, until the test ends (or two minutes pass: it stops by itself). It
// returns once every one was opened; opened reads how many the process
// has opened so far.
func holdHalfOpen(t *testing.T, url string, addrs []string, n int) (opened func() int64) {
	t.Helper()
	host := strings.TrimPrefix(strings.TrimSuffix(url, "/mcp"), "http://")
	cmd := helperproc.Command(t, "half-open", host, strconv.Itoa(n), strings.Join(addrs, ","))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	var count atomic.Int64
	ready := make(chan struct{})
	go func() {
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			if v, err := strconv.ParseInt(lines.Text(), 10, 64); err == nil {
				if count.Swap(v) < int64(n*len(addrs)) && v >= int64(n*len(addrs)) {
					close(ready)
				}
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(60 * time.Second):
		t.Fatalf("the holder did not open its %d connections", n*len(addrs))
	}
	return count.Load
}

// playHalfOpen is the process of holdHalfOpen (args: the server's
// host:port, n, the addresses): it prints how many connections it opened,
// every 50 ms, and ends when its stdin does.
func playHalfOpen(args []string) error {
	host, addrs := args[0], strings.Split(args[2], ",")
	n, err := strconv.Atoi(args[1])
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	go func() { io.Copy(io.Discard, os.Stdin); cancel() }()
	var opened atomic.Int64
	var wg sync.WaitGroup
	first := strings.ReplaceAll(partialHeaders, "HOST", host)
	for _, a := range addrs {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(a)}}
		for range n {
			wg.Go(func() { holdOne(ctx, d, host, first, &opened) })
		}
	}
	for ctx.Err() == nil {
		fmt.Println(opened.Load())
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	wg.Wait()
	return nil
}

// holdOne keeps one half-open connection to host until ctx ends, opening
// it again whenever the server closes it.
func holdOne(ctx context.Context, d *net.Dialer, host, first string, opened *atomic.Int64) {
	buf := make([]byte, 512)
	for ctx.Err() == nil {
		c, err := d.DialContext(ctx, "tcp", host)
		if err != nil {
			time.Sleep(10 * time.Millisecond) // the backlog is full: try again
			continue
		}
		opened.Add(1)
		stop := context.AfterFunc(ctx, func() { c.Close() })
		if _, err := io.WriteString(c, first); err == nil {
			for err == nil {
				_, err = c.Read(buf)
			}
		}
		stop()
		c.Close()
	}
}

// playHelper plays the role of a process of these tests.
func playHelper(role string, args []string) error {
	switch role {
	case "half-open":
		return playHalfOpen(args)
	}
	return fmt.Errorf("no helper role %q", role)
}

// openFiles is how many descriptors process pid holds open.
func openFiles(t *testing.T, pid int) int {
	t.Helper()
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// Issue 46, item 9: agents on one host share one address, and none of
// them locks another out. Ten agents each open 15 connections at once
// (150 from 127.0.0.1, each holding a call until all are open), keep
// them pooled, and call over them: every call is answered.
func TestHTTPLocalAgentsCrowd(t *testing.T) {
	p := newProject(t)
	srv := p.serveHTTP()
	tokens := append([]string{p.passkeys["coder"], p.passkeys["reviewer"]}, p.addAgents(8)...)
	const pooled, rounds = 15, 4
	var dials, failed atomic.Int64
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for a, token := range tokens {
		client := localClient("127.0.0.1", pooled, &dials)
		defer client.CloseIdleConnections()
		for c := range pooled {
			wg.Go(func() {
				for r := range rounds {
					g := gate
					if r > 0 {
						g = nil
					}
					if err := callHelpAfter(client, srv.url, token, g); err != nil && failed.Add(1) <= 5 {
						t.Errorf("agent %d, caller %d, round %d: %v", a+1, c, r, err)
					}
				}
			})
		}
	}
	all := int64(len(tokens) * pooled)
	waitUntil(t, 60*time.Second, "the agents' connections were not all opened", func() bool { return dials.Load() >= all })
	close(gate)
	wg.Wait()
	t.Logf("%d agents × %d callers × %d rounds over %d connections; %d calls failed", len(tokens), pooled, rounds, dials.Load(), failed.Load())
	if failed.Load() > 0 {
		t.Fatalf("%d of %d calls of honest pooled agents failed", failed.Load(), all*rounds)
	}
}

// Issue 46, item 9: a local process holding many half-open connections
// (from the agents' own address, 127.0.0.1) locks no agent out: every
// call of an honest agent, each on a new connection, is answered.
func TestHTTPLocalHolderLocksNoOneOut(t *testing.T) {
	p := newProject(t)
	srv := p.serveHTTP()
	holdHalfOpen(t, srv.url, []string{"127.0.0.1"}, 200)
	client := localClient("127.0.0.1", 0, nil)
	const calls = 30
	failed := 0
	for i := range calls {
		if err := callHelp(client, srv.url, p.passkeys["coder"]); err != nil {
			failed++
			t.Logf("call %d: %v", i, err)
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d calls of an honest agent failed while a local process held half-open connections", failed, calls)
	}
}

// Issue 46, item 10: 40 loopback addresses each holding 128 half-header
// connections, re-opened as they are cut, never make the server hold more
// unauthenticated connections than its total (its open descriptors stay
// near it), and an honest agent's every call, each on a new connection,
// is answered meanwhile.
func TestHTTPUnauthenticatedTotal(t *testing.T) {
	p := newProject(t)
	srv := p.serveHTTP()
	pid := srv.cmd.Process.Pid
	base := openFiles(t, pid)
	var addrs []string
	for i := range 40 {
		addrs = append(addrs, fmt.Sprintf("127.0.2.%d", i+1))
	}
	opened := holdHalfOpen(t, srv.url, addrs, 128)
	total := mcpserver.DefaultHTTPLimits.Unauthenticated
	var peak atomic.Int64
	sampled := make(chan struct{})
	stop := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if n := int64(openFiles(t, pid)); n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	client := localClient("127.0.0.1", 0, nil)
	const calls = 20
	failed := 0
	var slowest time.Duration
	for i := range calls {
		start := time.Now()
		if err := callHelp(client, srv.url, p.passkeys["coder"]); err != nil {
			failed++
			t.Logf("call %d: %v", i, err)
		}
		slowest = max(slowest, time.Since(start))
	}
	close(stop)
	<-sampled
	t.Logf("%d attacking connections opened; the server held at most %d descriptors (%d before); the slowest of the honest calls took %v", opened(), peak.Load(), base, slowest)
	if failed > 0 {
		t.Errorf("%d of %d calls of an honest agent failed under the attack", failed, calls)
	}
	if slack := int64(base + 100); peak.Load() > int64(total)+slack {
		t.Errorf("the server held %d descriptors under the attack; the unauthenticated connections are bounded at %d in all (and %d more descriptors were allowed)", peak.Load(), total, slack)
	}
}

// Issue 46, item 11: a stranger's passkey-shaped guesses, from many
// loopback addresses and without pause, lock out no agent: one never
// proven to the server authenticates at once, and so does every agent of
// a server started while the guesses go on. Each guess costs the guesser:
// its answer waits (so that few are answered) and its connection is
// closed.
func TestHTTPGuessesCostTheGuesser(t *testing.T) {
	p := newProject(t)
	fresh := p.addAgents(1)[0]
	var url atomic.Pointer[string]
	srv := p.serveHTTP()
	url.Store(&srv.url)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const guessers = 8
	var answered, kept atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for g := range guessers {
		wg.Go(func() {
			client := localClient(fmt.Sprintf("127.0.3.%d", g+1), 4, nil)
			defer client.CloseIdleConnections()
			for i := 0; ctx.Err() == nil; i++ {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, *url.Load(), strings.NewReader(initBody))
				req.Header.Set("Authorization", "Bearer "+wrongToken(g*100000+i))
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					continue // cancelled, or the server was restarting
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusTooManyRequests {
					t.Errorf("a wrong token: %d", resp.StatusCode)
				}
				answered.Add(1)
				if !resp.Close {
					kept.Add(1)
				}
			}
		})
	}
	waitUntil(t, 60*time.Second, "the guesses were not answered", func() bool { return answered.Load() >= 2*guessers })

	// An agent never proven to this server, and then every agent of a
	// server started while the guesses go on.
	cs := p.connectHTTP(srv.url, "2025-11-25", fresh, nil)
	p.authenticateHeld(cs, "agent1", fsstore.PurposeChat)
	srv.cmd.Process.Signal(os.Interrupt)
	srv.cmd.Wait()
	again := p.serveHTTP()
	url.Store(&again.url)
	for _, agent := range []string{"coder", "reviewer"} {
		cs := p.connectHTTP(again.url, "2025-11-25", p.passkeys[agent], nil)
		p.authenticateHeld(cs, agent, fsstore.PurposeChat)
	}
	if err := callHelp(localClient("127.0.0.1", 0, nil), again.url, fresh); err != nil {
		t.Fatalf("the agent never proven to the new server: %v", err)
	}
	cancel()
	wg.Wait()
	span := time.Since(start)
	// Each guesser sends one guess at a time: its answers are at most one
	// per delay.
	bound := int64(guessers) * (int64(span/mcpserver.DefaultHTTPLimits.GuessDelay) + 2)
	t.Logf("%d guesses answered in %v (at most %d with the delay); %d kept their connection", answered.Load(), span, bound, kept.Load())
	if answered.Load() > bound {
		t.Errorf("%d guesses were answered in %v; with their answers delayed %v, at most %d could be", answered.Load(), span, mcpserver.DefaultHTTPLimits.GuessDelay, bound)
	}
	if kept.Load() > 0 {
		t.Errorf("%d answers to a wrong token kept their connection open", kept.Load())
	}
	if _, err := os.Stat(p.store.Root() + "/bearer.json"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the guesses were written down for the agents (bearer.json): %v", err)
	}
}
