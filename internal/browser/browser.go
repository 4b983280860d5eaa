// Package browser starts a headless Chromium for aipm's browser tests and
// for aipm-bench (the page of aipm web), through chromedp: one browser
// process with a throw-away profile, tabs in it, each with a log of every
// request its page made, and helpers to wait for a selector and to
// evaluate JavaScript. Nothing here reaches the network by itself: the
// flags turn off Chromium's background traffic.
package browser

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// Names are the programs Find looks for on PATH, in this order.
var Names = []string{"chromium", "chromium-browser", "google-chrome"}

// Find returns the path of the first of Names on PATH.
func Find() (string, error) {
	for _, name := range Names {
		if path, err := exec.LookPath(name); err == nil {
			return path, nil
		}
	}
	return "", ErrMissing
}

// Browser is one headless Chromium process.
type Browser struct {
	ctx         context.Context // the browser's chromedp context: tabs derive from it
	cancel      context.CancelFunc
	cancelAlloc context.CancelFunc
	profile     string
}

// Start starts headless Chromium (Find) with a new profile directory; the
// browser stops with ctx or Close. It returns ErrMissing (wrapped) when
// there is no Chromium.
func Start(ctx context.Context) (*Browser, error) {
	path, err := Find()
	if err != nil {
		return nil, fmt.Errorf("start browser: %w", err)
	}
	profile, err := os.MkdirTemp("", "aipm-chromium-*")
	if err != nil {
		return nil, fmt.Errorf("start browser: profile: %w", err)
	}
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.UserDataDir(profile),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancel := chromedp.NewContext(allocCtx)
	b := &Browser{ctx: bctx, cancel: cancel, cancelAlloc: cancelAlloc, profile: profile}
	if err := chromedp.Do(bctx); err != nil { // starts the process and its first tab
		b.Close()
		return nil, fmt.Errorf("start browser %s: %w", path, err)
	}
	return b, nil
}

// Close stops the browser and removes its profile.
func (b *Browser) Close() error {
	b.cancel()
	b.cancelAlloc()
	if err := os.RemoveAll(b.profile); err != nil {
		return fmt.Errorf("close browser: %w", err)
	}
	return nil
}

// Tab is one page of the browser, with the log of its requests.
type Tab struct {
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	requests []string
}

// NewTab opens a tab (in its own window, so that it gets animation frames,
// and its own browser context: cookies are not shared with other tabs)
// that closes when ctx ends or with Close. Every request its pages make is
// logged from the start (Requests).
func (b *Browser) NewTab(ctx context.Context) (*Tab, error) {
	t := &Tab{}
	t.ctx, t.cancel = chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext(), chromedp.WithListener(t.listen))
	stop := context.AfterFunc(ctx, t.cancel)
	t.cancel = func() { stop(); chromedpCancel(t.ctx) }
	if _, err := chromedp.Call(t.ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Close()
		return nil, fmt.Errorf("new tab: enable the network log: %w", err)
	}
	return t, nil
}

// chromedpCancel closes the tab of a chromedp context.
func chromedpCancel(ctx context.Context) { _ = chromedp.Cancel(ctx) }

// listen runs on the tab's reading goroutine: it must be quick.
func (t *Tab) listen(ev any) {
	if e, ok := ev.(*network.EventRequestWillBeSent); ok {
		t.mu.Lock()
		t.requests = append(t.requests, e.Request.URL)
		t.mu.Unlock()
	}
}

// Requests returns the URL of every request the tab's pages made so far,
// in order (redirects included: each hop is a request).
func (t *Tab) Requests() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.requests)
}

// Context is the tab's chromedp context, for any chromedp action.
func (t *Tab) Context() context.Context { return t.ctx }

// Close closes the tab.
func (t *Tab) Close() { t.cancel() }

// Do runs chromedp actions in the tab.
func (t *Tab) Do(ctx context.Context, steps ...chromedp.Action[chromedp.Void]) error {
	tctx, cancel := t.with(ctx)
	defer cancel()
	return chromedp.Do(tctx, steps...)
}

// with is the tab's context, ending also when ctx ends.
func (t *Tab) with(ctx context.Context) (context.Context, context.CancelFunc) {
	tctx, cancel := context.WithCancelCause(t.ctx)
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	return tctx, func() { stop(); cancel(context.Canceled) }
}

// Navigate loads url and waits for its load event.
func (t *Tab) Navigate(ctx context.Context, url string) error {
	if err := t.Do(ctx, chromedp.Navigate(url)); err != nil {
		return fmt.Errorf("navigate to %s: %w", url, err)
	}
	return nil
}

// WaitReady waits until an element matches the CSS selector sel.
func (t *Tab) WaitReady(ctx context.Context, sel string) error {
	if err := t.Do(ctx, chromedp.WaitReady(chromedp.CSS(sel))); err != nil {
		return fmt.Errorf("wait for %s: %w", sel, err)
	}
	return nil
}

// Click clicks the first element matching the CSS selector sel (once it
// is visible).
func (t *Tab) Click(ctx context.Context, sel string) error {
	if err := t.Do(ctx, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible)); err != nil {
		return fmt.Errorf("click %s: %w", sel, err)
	}
	return nil
}

// Eval evaluates the JavaScript expression js in the page and decodes its
// value (JSON) into a T.
func Eval[T any](ctx context.Context, t *Tab, js string) (T, error) {
	tctx, cancel := t.with(ctx)
	defer cancel()
	v, err := chromedp.Run(tctx, chromedp.Evaluate[T](js))
	if err != nil {
		return v, fmt.Errorf("evaluate %.60q: %w", js, err)
	}
	return v, nil
}

// Await evaluates js, which gives a promise, and decodes the value the
// promise resolves to.
func Await[T any](ctx context.Context, t *Tab, js string) (T, error) {
	tctx, cancel := t.with(ctx)
	defer cancel()
	v, err := chromedp.Run(tctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		return v, fmt.Errorf("await %.60q: %w", js, err)
	}
	return v, nil
}

// Screenshot sets the tab's viewport to width x height and captures it as
// PNG.
func (t *Tab) Screenshot(ctx context.Context, width, height int64) ([]byte, error) {
	tctx, cancel := t.with(ctx)
	defer cancel()
	if err := chromedp.Do(tctx, chromedp.EmulateViewport(width, height)); err != nil {
		return nil, fmt.Errorf("screenshot: viewport: %w", err)
	}
	png, err := chromedp.Run(tctx, chromedp.CaptureScreenshot())
	if err != nil {
		return nil, fmt.Errorf("screenshot: %w", err)
	}
	return png, nil
}

// OnNewDocument makes js run in every document the tab loads from now on,
// before the page's own scripts (the page's CSP does not apply to it).
func (t *Tab) OnNewDocument(ctx context.Context, js string) error {
	tctx, cancel := t.with(ctx)
	defer cancel()
	if _, err := chromedp.Call(tctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: js}); err != nil {
		return fmt.Errorf("script for new documents: %w", err)
	}
	return nil
}
