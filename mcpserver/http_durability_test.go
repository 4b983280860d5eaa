package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"aipm/fsstore"
)

// Durability over HTTP: 8 agents on one aipm serve --http process, each
// with its own HTTP client (its own connections), each sending n messages
// to the next while every agent reads its own. Every message is exactly
// once in the sender's and in the receiver's chat file, no line is torn,
// and each receiver got each of its messages exactly once. n is 200, or
// 10,000 with AIPM_LONG=1.
func TestHTTPDurability(t *testing.T) {
	n := 200
	if os.Getenv("AIPM_LONG") != "" {
		n = 10000
	}
	const agents = 8
	p := newProject(t)
	ids := make([]string, agents)
	for i := range ids {
		ids[i] = fmt.Sprintf("a%d", i)
		key, err := p.store.AddAgent(context.Background(), fsstore.NewAgent{ID: ids[i], Type: fsstore.AgentAI, Parent: "lead"})
		if err != nil {
			t.Fatal(err)
		}
		p.passkeys[ids[i]] = key
	}
	srv := p.serveHTTP()
	start := time.Now()
	var wg sync.WaitGroup
	got := make([]map[string]int, agents) // receiver -> content -> times
	errs := make(chan error, 2*agents)
	for i, id := range ids {
		cs := p.connectHTTP(srv.url, "2025-11-25", p.passkeys[id], nil)
		tok := p.authenticateHTTP(cs, id, fsstore.PurposeChat)
		to := ids[(i+1)%agents]
		got[i] = map[string]int{}
		wg.Add(2)
		go func() {
			defer wg.Done()
			for k := range n {
				r := call(t, cs, "send_message", map[string]any{"session_token": tok, "target_agent_id": to, "content": fmt.Sprintf("%s>%s #%d", id, to, k)})
				if r.isError {
					errs <- fmt.Errorf("%s send %d: %s", id, k, r.text)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for deadline := time.Now().Add(time.Duration(n) * 200 * time.Millisecond); len(got[i]) < n; {
				if time.Now().After(deadline) {
					errs <- fmt.Errorf("%s received %d of %d", id, len(got[i]), n)
					return
				}
				r := call(t, cs, "get_pending_messages", map[string]any{"session_token": tok, "limit": 100})
				msgs, _ := r.data["pending_messages"].([]any)
				if len(msgs) == 0 {
					time.Sleep(10 * time.Millisecond)
				}
				for _, m := range msgs {
					got[i][m.(map[string]any)["content"].(string)]++
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d agents x %d sends over HTTP with reads: %v", agents, n, time.Since(start).Round(time.Millisecond))
	for i, id := range ids {
		from := ids[(i+agents-1)%agents]
		for k := range n {
			if c := got[i][fmt.Sprintf("%s>%s #%d", from, id, k)]; c != 1 {
				t.Fatalf("%s got message %d of %s %d times", id, k, from, c)
			}
		}
		checkChatFile(t, p, id, 2*n)
	}
}

// checkChatFile checks that id's chat file holds want distinct messages,
// each once, every line whole.
func checkChatFile(t *testing.T, p *project, id string, want int) {
	t.Helper()
	// Its file: n sent, n received, each once, every line whole.
	path, err := p.store.ChatPath(id)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m struct {
			Content string `json:"content"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: a torn line: %q", path, sc.Text())
		}
		seen[m.Content]++
	}
	f.Close()
	if len(seen) != want {
		t.Fatalf("%s holds %d distinct messages, want %d", path, len(seen), want)
	}
	for c, times := range seen {
		if times != 1 {
			t.Fatalf("%s holds %q %d times", path, c, times)
		}
	}
}
