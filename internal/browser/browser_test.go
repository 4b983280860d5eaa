package browser_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"aipm/internal/browser"
	"aipm/internal/browser/browsertest"
)

// TestTab: a page loads, its script's effects are seen through a selector
// and an evaluation (a promise awaited), and the request log holds the
// page, its script and its image from another host.
func TestTab(t *testing.T) {
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1) + "/pixel.png"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			fmt.Fprintf(w, `<!doctype html><title>t</title><body><img src="%s"><script src="/app.js"></script></body>`, otherURL)
		case "/app.js":
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, `setTimeout(() => { const p = document.createElement("p"); p.id = "late"; p.textContent = "hello"; document.body.append(p); }, 20);`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tab := browsertest.Tab(t, ctx, browsertest.Start(t))
	if err := tab.Navigate(ctx, srv.URL+"/"); err != nil {
		t.Fatal(err)
	}
	if err := tab.WaitReady(ctx, "#late"); err != nil {
		t.Fatal(err)
	}
	text, err := browser.Eval[string](ctx, tab, `document.getElementById("late").textContent`)
	if err != nil || text != "hello" {
		t.Fatalf("text = %q, %v; want hello", text, err)
	}
	n, err := browser.Await[int](ctx, tab, `new Promise(r => setTimeout(() => r(42), 5))`)
	if err != nil || n != 42 {
		t.Fatalf("awaited %d, %v; want 42", n, err)
	}
	got := tab.Requests()
	for _, want := range []string{srv.URL + "/", srv.URL + "/app.js", otherURL} {
		if !slices.Contains(got, want) {
			t.Errorf("requests %q lack %s", got, want)
		}
	}
}
