package hook

import (
	"fmt"
	"io"
	"sync"
	"time"

	"aipm/fsstore"
	"aipm/internal/stackstart"
)

// ReadLimit bounds how long the hook waits for the client's event on
// stdin: both clients write it whole as the hook starts, so a client that
// writes nothing, or half an event, and keeps stdin open is answered as an
// input that cannot be read (unreadable) rather than waited for until the
// client kills the hook, which would count as no answer and let a tool
// call run. With WorkLimit it stays inside the 10 s aipm's hook entries
// give.
const ReadLimit = 5 * time.Second

// readInputWithin is ReadInput, given up after limit: then in is what the
// input read so far named (headInput), and err says that no whole event
// came. The read goes on in the background until stdin closes or the
// process exits.
func readInputWithin(r io.Reader, limit time.Duration) (Input, error) {
	rec := &headRecorder{r: r}
	type read struct {
		in  Input
		err error
	}
	done := make(chan read, 1)
	go func() {
		stackstart.Grow() // the decoder's depth at once, not in two copies
		in, err := ReadInput(rec)
		done <- read{in, err}
	}()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case got := <-done:
		return got.in, got.err
	case <-timer.C:
		return headInput(rec.head()), fmt.Errorf("no whole hook event on stdin within %v (the client writes one JSON object and keeps writing nothing)", limit)
	}
}

// headRecorder is r, keeping the first maxHead bytes read for
// readInputWithin to look at while the read goes on.
type headRecorder struct {
	r   io.Reader
	mu  sync.Mutex
	buf []byte
}

func (h *headRecorder) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.mu.Lock()
	if room := maxHead - len(h.buf); room > 0 {
		h.buf = append(h.buf, p[:min(n, room)]...)
	}
	h.mu.Unlock()
	return n, err
}

// head is a copy of what was read so far, up to maxHead bytes.
func (h *headRecorder) head() []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]byte(nil), h.buf...)
}

// unreadableWrite is the refusal of in, a PreToolUse whose input could not
// be read whole (err says why), of a tool that writes files (or one the
// input did not name): its files are unknown, so while another holder's
// exclusive lease could refuse them, or the leases cannot be read, the
// call is denied rather than let through unchecked. "" when no lease
// could refuse it, or in is no such call.
func (h *Hook) unreadableWrite(in Input, err error) string {
	if in.Event != PreToolUse || in.ToolName != "" && h.writingTool(in.ToolName) == nil {
		return ""
	}
	held, lerr := h.Store.LeasedByOthers(h.Agent)
	tool := in.ToolName
	if tool == "" {
		tool = "tool"
	}
	switch {
	case lerr != nil:
		return fmt.Sprintf("aipm: this %s call's input could not be read whole (%v), and the file leases cannot be read either (%v), so no file may be written: retry the call, and ask a human to repair %s", tool, err, lerr, h.Store.Rel(h.Store.LeasesPath()))
	case held:
		return fmt.Sprintf("aipm: this %s call's input could not be read whole (%v), so the files it writes cannot be checked against the file leases others hold: retry the call, writing less at once", tool, err)
	}
	return ""
}

// leaseDenial is the denial record of unreadableWrite's refusal.
var leaseDenial = fsstore.Denial{Why: fsstore.DeniedUnreadable}
