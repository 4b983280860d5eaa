package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"slices"
	"strconv"
	"strings"
	"time"

	"aipm/fsstore"
	"aipm/internal/browser"
	"aipm/web"
)

// P9's targets (DESIGN's for aipm web).
const (
	webP99Target    = 100 * time.Millisecond
	webP50Target    = 20 * time.Millisecond
	webWeightTarget = 150 * 1024
)

// noBrowser is the row of a P9 target that needs Chromium when there is none.
func noBrowser(id, what, target string) Row {
	return Row{id: id, what: what, aipm: "not measured: " + browser.ErrMissing.Error(), floor: "-", compared: "-", target: target}
}

// startWeb runs aipm web on store until the returned stop is called.
func (b *bench) startWeb(store *fsstore.Store) (*web.Server, func(), error) {
	ctx, cancel := context.WithCancel(b.ctx)
	srv, err := web.Start(ctx, store, web.Options{})
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("start aipm web: %w", err)
	}
	return srv, func() { cancel(); srv.Wait() }, nil
}

// startBrowser starts Chromium; nil, nil when there is none.
func (b *bench) startBrowser() (*browser.Browser, error) {
	br, err := browser.Start(b.ctx)
	if errors.Is(err, browser.ErrMissing) {
		b.progress("P9: %v", err)
		return nil, nil
	}
	return br, err
}

// openPage opens srv's page in a new tab of br and waits for its first
// render.
func (b *bench) openPage(br *browser.Browser, srv *web.Server) (*browser.Tab, error) {
	tab, err := br.NewTab(b.ctx)
	if err != nil {
		return nil, err
	}
	if err := tab.Navigate(b.ctx, srv.URL()); err != nil {
		tab.Close()
		return nil, err
	}
	if err := tab.WaitReady(b.ctx, "body[data-event-id]"); err != nil {
		tab.Close()
		return nil, err
	}
	return tab, nil
}

// webLive is P9a: a message appended (fsstore Send, human to AI agent) ->
// the open page has rendered it (its data-event-id advanced and the
// message's .msg exists), beside P1's inotify floor, one floor sample
// after each.
func (b *bench) webLive() ([]Row, error) {
	const id, target = "P9a", "p99 <= 100 ms, p50 <= 20 ms"
	what := fmt.Sprintf("file append -> DOM updated in the browser p50/p99, %d samples", b.webSamples)
	b.progress("P9a: %d messages appended -> rendered by aipm web's page in headless Chromium", b.webSamples)
	br, err := b.startBrowser()
	if err != nil || br == nil {
		return []Row{noBrowser(id, what, target)}, err
	}
	defer br.Close()
	store, _, err := b.project("p9a", "coder")
	if err != nil {
		return nil, err
	}
	if _, err := store.AddAgent(b.ctx, fsstore.NewAgent{ID: "lead", Type: fsstore.AgentHuman}); err != nil {
		return nil, err
	}
	cfg, err := store.LoadConfig()
	if err != nil {
		return nil, err
	}
	srv, stop, err := b.startWeb(store)
	if err != nil {
		return nil, err
	}
	defer stop()
	tab, err := b.openPage(br, srv)
	if err != nil {
		return nil, err
	}
	defer tab.Close()
	floor, err := b.newDeliveryFloor("p9a-floor")
	if err != nil {
		return nil, err
	}
	defer floor.close()
	var lat, floorLat []time.Duration
	var usage cpuUsage
	for i := range b.webSamples {
		usage.start()
		d, err := b.rendered(tab, func(content string) (string, error) {
			m, err := store.Send(b.ctx, cfg, fsstore.OutgoingMessage{From: "lead", To: "coder", Content: content})
			return m.ID, err
		}, "bench "+strconv.Itoa(i))
		usage.stop()
		if err != nil {
			return nil, fmt.Errorf("P9a sample %d: %w", i, err)
		}
		fs, _, err := floor.sample()
		if err != nil {
			return nil, err
		}
		lat, floorLat = append(lat, d), append(floorLat, fs)
	}
	slices.Sort(lat)
	slices.Sort(floorLat)
	p50, p99 := percentile(lat, 50), percentile(lat, 99)
	return []Row{Row{
		id: id, what: what,
		aipm:     ms(p50) + " / " + ms(p99),
		floor:    ms(percentile(floorLat, 50)) + " / " + ms(percentile(floorLat, 99)) + " (inotify wake)",
		compared: "p99 " + signedMs(p99-percentile(floorLat, 99)),
		target:   target,
		cpu:      usage.String(), aipmValues: latencies(lat), floorValues: latencies(floorLat),
	}.judged(atMost("p99", msOf(p99), msOf(webP99Target), "ms"), atMost("p50", msOf(p50), msOf(webP50Target), "ms"))}, nil
}

// renderedJS is a promise, set up in the page before the append, that
// resolves with the data-msg-id of the .msg whose text is CONTENT once the
// body's data-event-id (set after each render) has passed its value now
// and the message is there.
const renderedJS = `window.__p9 = new Promise(resolve => {
	const before = +document.body.dataset.eventId, want = CONTENT;
	const found = () => {
		if (+document.body.dataset.eventId <= before) return null;
		for (const m of document.querySelectorAll(".msg[data-msg-id]")) {
			const c = m.querySelector(".content");
			if (c && c.textContent === want) return m.dataset.msgId;
		}
		return null;
	};
	const obs = new MutationObserver(() => { const id = found(); if (id) { obs.disconnect(); resolve(id); } });
	obs.observe(document.body, {attributes: true, attributeFilter: ["data-event-id"]});
}), true`

// rendered times one append (send, which returns the new message's id)
// to its render in tab.
func (b *bench) rendered(tab *browser.Tab, send func(content string) (string, error), content string) (time.Duration, error) {
	if _, err := browser.Eval[bool](b.ctx, tab, strings.Replace(renderedJS, "CONTENT", strconv.Quote(content), 1)); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	start := time.Now()
	id, err := send(content)
	if err != nil {
		return 0, err
	}
	got, err := browser.Await[string](ctx, tab, `window.__p9`)
	took := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("the page did not render message %s: %w", id, err)
	}
	if got != id {
		return 0, fmt.Errorf("the page rendered the message as %s, want %s", got, id)
	}
	return took, nil
}

// firstRenderJS, run before the page's scripts, notes when data-event-id
// is first set (ms since the navigation started).
const firstRenderJS = `new MutationObserver((_, obs) => {
	if (document.body && document.body.dataset.eventId !== undefined) {
		window.__firstRender = performance.now();
		obs.disconnect();
	}
}).observe(document, {subtree: true, attributes: true, attributeFilter: ["data-event-id"]});`

// webFirstRender is P9b: navigation -> the page's first render (its
// data-event-id set) with a long chat history against a new project,
// navigations alternating between the two.
func (b *bench) webFirstRender() ([]Row, error) {
	const id, target = "P9b", "<= 1.5x"
	lines := fmt.Sprintf("%d", b.history)
	if b.history == 1_000_000 {
		lines = "1,000,000"
	}
	what := "first render p50 (navigation -> first data-event-id), " + lines + " lines of history vs a new project"
	b.progress("P9b: %d first renders of aipm web's page, %s lines of history vs a new project", 2*b.renders, lines)
	br, err := b.startBrowser()
	if err != nil || br == nil {
		return []Row{noBrowser(id, what, target)}, err
	}
	defer br.Close()
	var tabs [2]*browser.Tab
	var servers [2]*web.Server
	for i, n := range []int{b.history, 0} {
		srv, tab, stop, err := b.renderProject(br, fmt.Sprintf("p9b-%d", n), n)
		if err != nil {
			return nil, err
		}
		defer stop()
		tabs[i], servers[i] = tab, srv
	}
	var long, short []time.Duration
	for range b.renders {
		for i, to := range []*[]time.Duration{&long, &short} {
			d, err := b.firstRender(tabs[i], servers[i])
			if err != nil {
				return nil, err
			}
			*to = append(*to, d)
		}
	}
	slices.Sort(long)
	slices.Sort(short)
	ratio := float64(percentile(long, 50)) / float64(percentile(short, 50))
	return []Row{Row{
		id: id, what: what,
		aipm: ms(percentile(long, 50)), floor: ms(percentile(short, 50)) + " (new project)",
		compared: fmt.Sprintf("%.2fx", ratio), target: target,
		aipmValues: median(long), floorValues: median(short),
	}.judged(atMost("p50 / floor p50", ratio, 1.5, "x"))}, nil
}

// renderProject makes a project whose human's chat with an AI agent holds
// history lines, serves it, and opens a tab that notes its first renders.
func (b *bench) renderProject(br *browser.Browser, name string, history int) (*web.Server, *browser.Tab, func(), error) {
	store, _, err := b.project(name, "r", "w")
	if err != nil {
		return nil, nil, nil, err
	}
	if _, err := store.AddAgent(b.ctx, fsstore.NewAgent{ID: "lead", Type: fsstore.AgentHuman}); err != nil {
		return nil, nil, nil, err
	}
	path, _ := store.ChatPath("r")
	if err := writeHistory(store, path, history); err != nil {
		return nil, nil, nil, err
	}
	srv, stop, err := b.startWeb(store)
	if err != nil {
		return nil, nil, nil, err
	}
	tab, err := br.NewTab(b.ctx)
	if err == nil {
		err = tab.OnNewDocument(b.ctx, firstRenderJS)
	}
	if err != nil {
		stop()
		return nil, nil, nil, err
	}
	return srv, tab, func() { tab.Close(); stop() }, nil
}

// firstRender navigates tab to srv's page and returns the time from the
// navigation's start to the page's first render.
func (b *bench) firstRender(tab *browser.Tab, srv *web.Server) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	if err := tab.Navigate(ctx, srv.URL()); err != nil {
		return 0, err
	}
	msf, err := browser.Await[float64](ctx, tab, `new Promise(resolve => {
		const check = () => window.__firstRender !== undefined ? resolve(window.__firstRender) : setTimeout(check, 5);
		check();
	})`)
	if err != nil {
		return 0, fmt.Errorf("first render: %w", err)
	}
	return time.Duration(msf * float64(time.Millisecond)), nil
}

// webWeight is P9c: the bytes of the page as served (index.html, app.js,
// style.css), through a client that logs in as a browser does.
func (b *bench) webWeight() ([]Row, error) {
	b.progress("P9c: the weight of aipm web's page")
	store, _, err := b.project("p9c", "coder")
	if err != nil {
		return nil, err
	}
	if _, err := store.AddAgent(b.ctx, fsstore.NewAgent{ID: "lead", Type: fsstore.AgentHuman}); err != nil {
		return nil, err
	}
	srv, stop, err := b.startWeb(store)
	if err != nil {
		return nil, err
	}
	defer stop()
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, err
	}
	client := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	var parts []string
	total := 0
	for _, u := range []string{srv.URL(), srv.Origin() + "/static/app.js", srv.Origin() + "/static/style.css"} {
		n, err := b.fetchSize(client, u)
		if err != nil {
			return nil, err
		}
		total += n
		parts = append(parts, fmt.Sprintf("%.1f", float64(n)/1024))
	}
	return []Row{Row{
		id: "P9c", what: "page weight: index.html + app.js + style.css as served",
		aipm: fmt.Sprintf("%.1f KB", float64(total)/1024), floor: "-",
		compared: strings.Join(parts, " + ") + " KB", target: "<= 150 KB",
		aipmValues: values{"size_kb": float64(total) / 1024},
	}.judged(atMost("size", float64(total)/1024, webWeightTarget/1024, "KB"))}, nil
}

// fetchSize GETs u and returns the size of its body.
func (b *bench) fetchSize(client *http.Client, u string) (int, error) {
	req, err := http.NewRequestWithContext(b.ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("P9c: %w", err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return 0, fmt.Errorf("P9c: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("P9c: GET %s: %s", resp.Request.URL.Path, resp.Status)
	}
	return int(n), nil
}
