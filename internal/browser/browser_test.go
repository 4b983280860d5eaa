package browser_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"aipm/internal/browser"
	"aipm/internal/browser/browsertest"
)

// TestTab: a page loads, its script's effects are seen through a selector
// and an evaluation (a promise awaited), and the request log holds the
// page and its script.
func TestTab(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			fmt.Fprint(w, `<!doctype html><title>t</title><body><script src="/app.js"></script></body>`)
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
	got := strings.Join(tab.Requests(), " ")
	if want := srv.URL + "/ " + srv.URL + "/app.js"; !strings.HasPrefix(got, want) {
		t.Errorf("requests %q, want them to start with %q", got, want)
	}
}
