// Package web is `aipm web`: one page, embedded in the binary, that shows
// a project's board live to the humans and lets them act through the same
// rules as the CLI (DESIGN section 16). The page's data comes from one
// State, rebuilt from .ai-pm/ through fsstore whenever fsnotify says
// something changed, and pushed with server-sent events. The server binds
// loopback by default; every request needs the token printed with its
// URL, Host and Origin are checked (DNS rebinding), POSTs need the page's
// CSRF token, and the Content-Security-Policy allows nothing but the
// server itself.
package web

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"aipm/fsstore"
	"aipm/wake"
)

//go:embed static
var static embed.FS

// Options shape a server.
type Options struct {
	// Addr is where to listen; "" is 127.0.0.1:0 (a free port).
	Addr string
	// AllowRemote allows an address that is not loopback.
	AllowRemote bool
}

// Server is a running aipm web.
type Server struct {
	store   *fsstore.Store
	token   string
	csrf    string
	origin  string
	port    string
	hosts   map[string]bool
	anyHost bool // bound to every interface with AllowRemote: any Host naming the port
	cookie  string
	page    *template.Template
	srv     *http.Server
	done    chan error
	states  *stateFeed
}

// cookiePrefix names the cookie that holds the token after the first
// visit; the port follows, since a browser sends a host's cookies to all
// its ports (two boards open at once keep their own).
const cookiePrefix = "aipm_token_"

// Start listens on o.Addr and serves the project of store until ctx ends.
func Start(ctx context.Context, store *fsstore.Store, o Options) (*Server, error) {
	addr := o.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	if err := checkAddr(addr, o.AllowRemote); err != nil {
		return nil, err
	}
	page, err := template.ParseFS(static, "static/index.html")
	if err != nil {
		return nil, fmt.Errorf("web: page template: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("web: listen %s: %w", addr, err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	host, _, _ := net.SplitHostPort(addr)
	wildcard := host == "" || host == "0.0.0.0" || host == "::"
	if wildcard {
		host = "127.0.0.1"
	}
	s := &Server{
		store: store, token: randomToken(), csrf: randomToken(), page: page, done: make(chan error, 1),
		origin: "http://" + net.JoinHostPort(host, port), port: port, cookie: cookiePrefix + port,
		hosts:   map[string]bool{net.JoinHostPort(host, port): true, "localhost:" + port: true, "127.0.0.1:" + port: true},
		anyHost: wildcard && o.AllowRemote,
	}
	s.states = newStateFeed(store, wake.New())
	s.srv = &http.Server{
		Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		// Every request ends with ctx: event streams too, so that shutting
		// down does not wait on them.
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	fed := make(chan struct{})
	go func() {
		s.states.run(ctx)
		close(fed)
	}()
	go func() {
		err := s.srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		<-fed // nothing reads the project once Wait returns
		s.done <- err
	}()
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		s.srv.Shutdown(shut)
		s.srv.Close()
	}()
	return s, nil
}

// checkAddr refuses a non-loopback address unless allowed.
func checkAddr(addr string, allowRemote bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("web: address %q is %w: give host:port, such as 127.0.0.1:8080", addr, ErrAddr)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip != nil && ip.IsLoopback() || allowRemote {
		return nil
	}
	return fmt.Errorf("web: %s is %w: anyone who can reach it and learns the token can act as the project's humans, over plain HTTP; use 127.0.0.1 (and an SSH tunnel), or pass --allow-remote if you accept that", addr, ErrRemote)
}

func randomToken() string {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// URL is the address to open: it carries the token, which the first
// visit trades for a cookie.
func (s *Server) URL() string { return s.origin + "/?token=" + url.QueryEscape(s.token) }

// Origin is the server's origin (what a browser sends as Origin).
func (s *Server) Origin() string { return s.origin }

// Token is the token every request needs.
func (s *Server) Token() string { return s.token }

// Wait returns once the server stopped (after its context ended).
func (s *Server) Wait() error { return <-s.done }

// routes are the page, its files, the state, its event stream and the
// actions, behind the checks every request passes.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.index)
	files, _ := fs.Sub(static, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(files)))
	mux.HandleFunc("GET /api/state", s.state)
	mux.HandleFunc("GET /api/events", s.events)
	for path, act := range actions {
		mux.HandleFunc("POST "+path, s.action(act))
	}
	return s.guard(mux)
}

// securityHeaders are on every response.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
	"X-Content-Type-Options":  "nosniff",
	"X-Frame-Options":         "DENY",
	"Referrer-Policy":         "no-referrer",
	"Cache-Control":           "no-store",
}

// guard checks every request: a Host that names this server (a page on
// another site that resolves its own name to 127.0.0.1 is refused: DNS
// rebinding), the token (cookie, or ?token= on the page itself), and for
// what changes or streams, an Origin that is this server's.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range securityHeaders {
			w.Header().Set(k, v)
		}
		if !s.hostOK(r.Host) {
			refuse(w, http.StatusForbidden, "this server answers only to "+s.origin+" (Host "+fsstore.Clip(r.Host, 80)+" refused)")
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && origin != "http://"+r.Host {
			refuse(w, http.StatusForbidden, "requests from another origin are refused")
			return
		}
		if r.URL.Path == "/" && r.URL.Query().Has("token") {
			s.welcome(w, r)
			return
		}
		c, err := r.Cookie(s.cookie)
		if err != nil || !s.tokenOK(c.Value) {
			refuse(w, http.StatusUnauthorized, "open the URL aipm web printed (it carries the token)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostOK says whether host names this server: its address, localhost or
// 127.0.0.1 with its port, or (bound to every interface with AllowRemote)
// any name with its port.
func (s *Server) hostOK(host string) bool {
	if s.hosts[host] {
		return true
	}
	_, port, err := net.SplitHostPort(host)
	return s.anyHost && err == nil && port == s.port
}

func (s *Server) tokenOK(t string) bool {
	return subtle.ConstantTimeCompare([]byte(t), []byte(s.token)) == 1
}

// welcome trades the URL's token for a cookie and sends the browser to
// the page without it (so the token leaves the address bar and history).
func (s *Server) welcome(w http.ResponseWriter, r *http.Request) {
	if !s.tokenOK(r.URL.Query().Get("token")) {
		refuse(w, http.StatusUnauthorized, "wrong token: open the URL aipm web printed")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: s.cookie, Value: s.token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// refuse answers with a one-sentence JSON error.
func refuse(w http.ResponseWriter, status int, msg string) {
	refuseCoded(w, status, "", msg)
}

// refuseErr answers with the one-sentence JSON error of a refused action,
// with its code when it has one (a *fsstore.CodeError: dependency_cycle,
// say), as the tools give it.
func refuseErr(w http.ResponseWriter, err error) {
	code := ""
	var ce *fsstore.CodeError
	if errors.As(err, &ce) {
		code = ce.Code
	}
	refuseCoded(w, statusOf(err), code, fsstore.Clip(err.Error(), 500))
}

// refuseCoded answers status with {"error": msg, "code": code} (no code
// when "").
func refuseCoded(w http.ResponseWriter, status int, code, msg string) {
	v := map[string]string{"error": msg}
	if code != "" {
		v["code"] = code
	}
	body, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// index is the page, with the project's name and the CSRF token.
func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	name := ""
	if cfg, err := s.store.LoadConfig(); err == nil {
		name = cfg.Project.Name
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := s.page.Execute(w, struct{ Project, CSRF string }{name, s.csrf}); err != nil {
		http.Error(w, "page: "+err.Error(), http.StatusInternalServerError)
	}
}

// state is the current State as JSON.
func (s *Server) state(w http.ResponseWriter, r *http.Request) {
	st := s.states.current()
	w.Header().Set("Content-Type", "application/json")
	w.Write(st.json)
}

// events streams the State: at once on connect (a reconnect, whatever
// Last-Event-ID it names, gets the whole current state: nothing is lost),
// then after every change.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		refuse(w, http.StatusInternalServerError, "streaming unsupported")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	ch, cancel := s.states.subscribe()
	defer cancel()
	rc := http.NewResponseController(w)
	ping := time.NewTicker(15 * time.Second)
	defer ping.Stop()
	sent := int64(-1)
	for {
		select {
		case <-r.Context().Done():
			return
		case <-ping.C:
			rc.SetWriteDeadline(time.Now().Add(writeLimit))
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return
			}
			flusher.Flush()
		case st := <-ch:
			if st.id == sent {
				continue
			}
			rc.SetWriteDeadline(time.Now().Add(writeLimit))
			if _, err := fmt.Fprintf(w, "id: %d\nevent: state\ndata: %s\n\n", st.id, st.json); err != nil {
				return
			}
			flusher.Flush()
			sent = st.id
		}
	}
}

// writeLimit bounds one write to an event stream: a client that stops
// reading is dropped instead of holding its goroutine.
const writeLimit = 30 * time.Second

// snapshot is one State, encoded once for every client.
type snapshot struct {
	id   int64
	json []byte
}

// stateFeed rebuilds the State when .ai-pm/ changes and hands it to every
// subscriber (each gets the newest; one slow client never holds the
// others).
type stateFeed struct {
	store *fsstore.Store
	hub   *wake.Hub
	build sync.Mutex // one rebuild at a time: ids follow the states
	body  []byte     // the last state published, without its id and time (under build)
	mu    sync.Mutex // guards last and subs
	last  snapshot
	subs  map[chan snapshot]bool
}

func newStateFeed(store *fsstore.Store, hub *wake.Hub) *stateFeed {
	f := &stateFeed{store: store, hub: hub, subs: map[chan snapshot]bool{}}
	f.rebuild(context.Background())
	return f
}

// recheck is how long the feed waits for fsnotify before it rebuilds
// anyway (a safety net for a lost event; a new directory, say).
const recheck = 5 * time.Second

func (f *stateFeed) run(ctx context.Context) {
	defer f.hub.Close()
	for ctx.Err() == nil {
		// Watch before reading: a change made while the state is read
		// wakes the next round instead of waiting for the recheck.
		sub, err := f.hub.Subscribe(f.store.WatchedDirs()...)
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(recheck):
			}
			f.rebuild(ctx)
			continue
		}
		f.rebuild(ctx)
		_, err = sub.Wait(ctx, recheck)
		sub.Close()
		if err != nil {
			return
		}
	}
}

// rebuild reads the State and, if it changed, publishes it under the next
// event id.
func (f *stateFeed) rebuild(ctx context.Context) {
	f.build.Lock()
	defer f.build.Unlock()
	st := buildState(ctx, f.store)
	body, _ := json.Marshal(st) // without id and time: what a change changes
	if f.body != nil && bytes.Equal(body, f.body) {
		return
	}
	f.body = body
	f.mu.Lock()
	defer f.mu.Unlock()
	st.EventID, st.Now = f.last.id+1, time.Now().UTC()
	data, _ := json.Marshal(st)
	f.last = snapshot{id: st.EventID, json: data}
	for ch := range f.subs {
		select {
		case <-ch: // drop the older one: the newest replaces it
		default:
		}
		ch <- f.last
	}
}

func (f *stateFeed) current() snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

// subscribe returns a channel that holds the current state at once and
// then the newest after each change.
func (f *stateFeed) subscribe() (<-chan snapshot, func()) {
	ch := make(chan snapshot, 1)
	f.mu.Lock()
	f.subs[ch] = true
	ch <- f.last
	f.mu.Unlock()
	return ch, func() {
		f.mu.Lock()
		delete(f.subs, ch)
		f.mu.Unlock()
	}
}
