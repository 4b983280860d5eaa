package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
	"aipm/mcpserver"
)

// httpServer is one `aipm serve --http` process of a test.
type httpServer struct {
	url    string
	stderr *logTail
	cmd    *exec.Cmd
}

// logTail is a server's stderr, kept for waits on a line.
type logTail struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logTail) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	os.Stderr.Write(b)
	return l.buf.Write(b)
}

// count is how many times s was logged.
func (l *logTail) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), s)
}

// waitFor waits until s was logged n times in all.
func (l *logTail) waitFor(t testing.TB, s string, n int) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); l.count(s) < n; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the server never logged %q %d times", s, n)
		}
	}
}

// serveHTTP starts `aipm serve --http 127.0.0.1:0` (plus args) for the
// project, debug-logging, and returns once it printed its URL; it is
// interrupted (SIGINT) when the test ends.
func (p *project) serveHTTP(args ...string) *httpServer {
	p.t.Helper()
	cmd := exec.Command(aipmBin, append([]string{"--dir", p.store.ProjectDir(), "serve", "--http", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), "AIPM_LOG=debug")
	tail := &logTail{}
	cmd.Stderr = tail
	out, err := cmd.StdoutPipe()
	if err != nil {
		p.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGINT)
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		p.t.Fatalf("aipm serve --http printed no URL: %v", err)
	}
	return &httpServer{url: strings.TrimSpace(line), stderr: tail, cmd: cmd}
}

// bearer is an http.RoundTripper that adds a bearer token.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// connectHTTP connects the SDK's streamable HTTP client to url at
// protocol, with token as its bearer token, over base (nil: a transport of
// its own).
func (p *project) connectHTTP(url, protocol, token string, base http.RoundTripper) *mcp.ClientSession {
	p.t.Helper()
	if base == nil {
		base = http.DefaultTransport.(*http.Transport).Clone()
	}
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token, base}}, MaxRetries: -1}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "aipm-test", Version: "1"}, nil).Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		p.t.Fatalf("connect over HTTP (protocol %s): %v", protocol, err)
	}
	p.t.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != protocol {
		p.t.Fatalf("connected at protocol %s, want %s", got, protocol)
	}
	return cs
}

// The official go-sdk client at each revision, two agents on one server
// with their own tokens: authenticate, a send, a wait that the send
// wakes, the pending messages, an interrupt that ends a wait, the
// notification line; identity comes from the token.
func TestHTTPSessionsAtEveryRevision(t *testing.T) {
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) {
			p := newProject(t)
			srv := p.serveHTTP()
			coder := p.connectHTTP(srv.url, rev, p.passkeys["coder"], nil)
			reviewer := p.connectHTTP(srv.url, rev, p.passkeys["reviewer"], nil)
			ctok := p.authenticateHeld(coder, "coder", fsstore.PurposeChat)
			rtok := p.authenticateHeld(reviewer, "reviewer", fsstore.PurposeChat)

			// A wait that a send from the other agent ends.
			got := make(chan result, 1)
			waits := srv.stderr.count("msg=waiting")
			go func() {
				got <- call(t, reviewer, "get_next_action", map[string]any{"session_token": rtok, "wait_seconds": 40})
			}()
			srv.stderr.waitFor(t, "msg=waiting", waits+1)
			if r := call(t, coder, "send_message", map[string]any{"session_token": ctok, "target_agent_id": "reviewer", "content": "over http"}); r.isError {
				t.Fatalf("send_message: %s", r.text)
			} else if !strings.HasPrefix(r.str("notification"), "notifications: ") {
				t.Fatalf("send_message answered no notification line: %v", r.data)
			}
			if r := <-got; r.isError || !strings.Contains(r.text, "get_pending_messages") {
				t.Fatalf("the wait answered %s; want get_pending_messages", r.text)
			}
			r := call(t, reviewer, "get_pending_messages", map[string]any{"session_token": rtok})
			msgs, _ := r.data["pending_messages"].([]any)
			if r.isError || len(msgs) != 1 || msgs[0].(map[string]any)["content"] != "over http" {
				t.Fatalf("get_pending_messages: %s", r.text)
			}

			// An interrupt ends a wait.
			waits = srv.stderr.count("msg=waiting")
			go func() {
				got <- call(t, coder, "get_next_action", map[string]any{"session_token": ctok, "wait_seconds": 40})
			}()
			srv.stderr.waitFor(t, "msg=waiting", waits+1)
			p.aipm(t, "interrupt", "coder", "plans changed", "--as", "lead")
			if r := <-got; !r.isError || !strings.HasPrefix(r.text, "INTERRUPT (get_next_action did not run): ") {
				t.Fatalf("the wait answered %s; want the interrupt", r.text)
			}
			// shown whole, it is told; unread until a call that complies
			if r := call(t, coder, "help", map[string]any{"session_token": ctok}); !strings.Contains(r.str("notification"), "(1 unread, told before)") {
				t.Fatalf("the notification line after the interrupt: %v", r.data)
			}

			// Identity from the token: the coder's connection cannot act as
			// the reviewer, with a passkey or the reviewer's session_token.
			before := p.tree()
			if r := call(t, coder, "authenticate", map[string]any{"agent_id": "reviewer", "passkey": p.passkeys["reviewer"]}); r.code() != "wrong_agent" {
				t.Fatalf("authenticate as another agent: %s", r.text)
			}
			if r := call(t, coder, "get_pending_messages", map[string]any{"session_token": rtok}); r.code() != "wrong_agent" {
				t.Fatalf("the reviewer's session_token on the coder's connection: %s", r.text)
			}
			if after := p.tree(); after != before {
				t.Fatalf("a refused call changed .ai-pm:\n%s\n---\n%s", before, after)
			}
		})
	}
}

// post sends one raw JSON-RPC POST to url with the given headers.
func post(t *testing.T, client *http.Client, url, body string, headers map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(data)
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// A missing token, a wrong one and a removed agent's are refused (401 with
// WWW-Authenticate: Bearer) and change nothing; an MCP session is bound to
// its agent; a web page's Origin and a foreign Host are refused.
func TestHTTPRefusals(t *testing.T) {
	p := newProject(t)
	goneKey, err := p.store.AddAgent(context.Background(), fsstore.NewAgent{ID: "gone", Type: fsstore.AgentAI, Parent: "lead"})
	if err != nil {
		t.Fatal(err)
	}
	p.aipm(t, "agent", "remove", "gone")
	srv := p.serveHTTP()
	client := &http.Client{}
	before := p.tree()

	for what, headers := range map[string]map[string]string{
		"no token":                nil,
		"a wrong token":           bearerOf("aipk_wrong"),
		"a removed agent's token": bearerOf(goneKey),
	} {
		resp, body := expectStatus(t, client, srv.url, initBody, headers, 401, what)
		if !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") || !strings.Contains(body, "Bearer") {
			t.Fatalf("%s: WWW-Authenticate %q, body %s", what, resp.Header.Get("WWW-Authenticate"), body)
		}
	}
	if after := p.tree(); after != before {
		t.Fatalf("a refused request changed .ai-pm:\n%s\n---\n%s", before, after)
	}

	resp, _ := expectStatus(t, client, srv.url, initBody, bearerOf(p.passkeys["coder"]), 200, "the coder's token")
	session := resp.Header.Get("Mcp-Session-Id")
	// The coder's MCP session with the reviewer's token: the SDK's check.
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	expectStatus(t, client, srv.url, list, with(bearerOf(p.passkeys["reviewer"]), "Mcp-Session-Id", session, "Mcp-Protocol-Version", "2025-06-18"), 403,
		"another agent's token on the coder's MCP session")
	// A web page: refused before anything else.
	if _, body := expectStatus(t, client, srv.url, initBody, with(bearerOf(p.passkeys["coder"]), "Origin", "https://evil.example"), 403, "a foreign Origin"); !strings.Contains(body, "Origin") {
		t.Fatalf("a foreign Origin: %s", body)
	}
	expectStatus(t, client, srv.url, initBody, with(bearerOf(p.passkeys["coder"]), "Origin", strings.TrimSuffix(srv.url, "/mcp")), 200, "the server's own Origin")
	// The SDK's DNS-rebinding check stays on.
	req, _ := http.NewRequest(http.MethodPost, srv.url, strings.NewReader(initBody))
	req.Host = "evil.example"
	req.Header.Set("Authorization", "Bearer "+p.passkeys["coder"])
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if resp, err := client.Do(req); err != nil || resp.StatusCode != 403 {
		t.Fatalf("a foreign Host: %v %v", resp, err)
	}
}

// Issue 46, item 11: wrong tokens from a client address that names
// someone back it off (3 free, then 429 with Retry-After until the wait is
// over), each answered late and with its connection closed; a right
// passkey from that address is never refused, whether it proved itself to
// the server before or not, and does not end the guesser's wait. From
// loopback, which names no one, guesses start no wait: a local agent is
// never taken for the guesser.
func TestHTTPBackoff(t *testing.T) {
	p := newProject(t)
	freshKey := p.addAgents(1)[0]
	var now atomic.Int64 // the back-off's clock, in seconds
	now.Store(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC).Unix())
	url := p.serveHTTPHere(mcpserver.HTTPLimits{GuessDelay: 10 * time.Millisecond}, someoneAt, func(h *mcpserver.HTTP) {
		h.SetClock(func() time.Time { return time.Unix(now.Load(), 0) })
	})
	client := localClient("127.0.0.7", 1, nil)

	// Three failures are free; the fourth starts a back-off of a second
	// (fsstore.BackoffAfter). (The fourth is a client config's variable
	// sent unexpanded, as Claude Code sends an unset one: the answer says
	// so.) Each answer closes its connection.
	for range 3 {
		if resp, _ := expectStatus(t, client, url, initBody, bearerOf("aipk_wrong"), 401, "a free failure"); !resp.Close {
			t.Fatal("a wrong token's answer kept its connection")
		}
	}
	if _, body := expectStatus(t, client, url, initBody, bearerOf("${AIPM_PASSKEY}"), 401, "the fourth failure"); !strings.Contains(body, "unexpanded") {
		t.Fatalf("an unexpanded variable as the token: %s", body)
	}
	if resp, _ := expectStatus(t, client, url, initBody, bearerOf("aipk_wrong"), 429, "a guess in back-off"); resp.Header.Get("Retry-After") != "2" || !resp.Close {
		t.Fatalf("a guess in back-off: Retry-After %q (want 2), Connection: close %v", resp.Header.Get("Retry-After"), resp.Close)
	}
	// Right passkeys from the same address, in its back-off: one never
	// seen by this server, then one seen before.
	expectStatus(t, client, url, initBody, bearerOf(freshKey), 200, "a passkey not seen yet, from an address in back-off")
	expectStatus(t, client, url, initBody, bearerOf(p.passkeys["coder"]), 200, "a right passkey, from an address in back-off")
	expectStatus(t, client, url, initBody, bearerOf(p.passkeys["coder"]), 200, "a passkey proven before, from an address in back-off")
	expectStatus(t, client, url, initBody, bearerOf("aipk_wrong"), 429, "the guesser after the right passkeys")
	// After the wait a guess is answered 401, but the failures go on in a
	// row: it starts a longer wait (the seventh: 8 s, then 16 s).
	now.Add(10)
	expectStatus(t, client, url, initBody, bearerOf("aipk_wrong"), 401, "a guess after the wait")
	if resp, _ := expectStatus(t, client, url, initBody, bearerOf("aipk_wrong"), 429, "the guess after it"); resp.Header.Get("Retry-After") != "16" {
		t.Fatalf("the eighth failure in a row: Retry-After %q, want 16", resp.Header.Get("Retry-After"))
	}
	now.Add(3600)
	expectStatus(t, client, url, initBody, bearerOf("aipk_wrong"), 401, "a guess after a quiet hour: the count starts over")

	// From loopback: no back-off, however many guesses.
	local := localClient("127.0.0.1", 1, nil)
	for range 8 {
		expectStatus(t, local, url, initBody, bearerOf("aipk_wrong"), 401, "a guess from loopback")
	}
	expectStatus(t, local, url, initBody, bearerOf(p.passkeys["reviewer"]), 200, "a right passkey from loopback")
}

// bearerOf is the header that carries token.
func bearerOf(token string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + token}
}

// with adds header name, value pairs to h.
func with(h map[string]string, kv ...string) map[string]string {
	for i := 0; i+1 < len(kv); i += 2 {
		h[kv[i]] = kv[i+1]
	}
	return h
}

// expectStatus posts body and fails the test unless the answer has status
// want.
func expectStatus(t *testing.T, client *http.Client, url, body string, headers map[string]string, want int, what string) (*http.Response, string) {
	t.Helper()
	resp, got := post(t, client, url, body, headers)
	if resp.StatusCode != want {
		t.Fatalf("%s: %d, want %d: %.300s", what, resp.StatusCode, want, got)
	}
	return resp, got
}

// TLS: a certificate made here; the SDK client connects over https.
func TestHTTPOverTLS(t *testing.T) {
	p := newProject(t)
	certFile, keyFile, pool := selfSigned(t)
	srv := p.serveHTTP("--tls-cert", certFile, "--tls-key", keyFile)
	if !strings.HasPrefix(srv.url, "https://127.0.0.1:") {
		t.Fatalf("URL %s; want https", srv.url)
	}
	base := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	cs := p.connectHTTP(srv.url, "2025-11-25", p.passkeys["coder"], base)
	p.authenticateHeld(cs, "coder", fsstore.PurposeChat)
	// Plain HTTP to the TLS port gets nowhere.
	if resp, err := http.Post("http"+strings.TrimPrefix(srv.url, "https"), "application/json", strings.NewReader(initBody)); err == nil && resp.StatusCode == 200 {
		t.Fatal("plain HTTP was served on the TLS port")
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns
// a pool that trusts it.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	certPEM, keyPEM := makeCert(t)
	dir := t.TempDir()
	certFile, keyFile = dir+"/cert.pem", dir+"/key.pem"
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	if !pool.AppendCertsFromPEM(certPEM) {
		t.Fatal("bad certificate")
	}
	return certFile, keyFile, pool
}

func makeCert(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "aipm test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}
