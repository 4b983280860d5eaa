package bench

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"aipm/internal/testenv"
)

// durations are 1 ms to n ms, sorted.
func durations(n int) []time.Duration {
	d := make([]time.Duration, n)
	for i := range d {
		d[i] = time.Duration(i+1) * time.Millisecond
	}
	return d
}

// TestPercentile: the p-th percentile of sorted durations is the one at
// len*p/100 (the upper one of two), the last for p = 100, 0 for none.
func TestPercentile(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    []time.Duration
		p    int
		want time.Duration
	}{
		{"none", nil, 50, 0},
		{"one, p50", durations(1), 50, time.Millisecond},
		{"one, p99", durations(1), 99, time.Millisecond},
		{"ten, p0", durations(10), 0, time.Millisecond},
		{"ten, p50", durations(10), 50, 6 * time.Millisecond},
		{"ten, p99", durations(10), 99, 10 * time.Millisecond},
		{"ten, p100", durations(10), 100, 10 * time.Millisecond},
		{"a hundred, p50", durations(100), 50, 51 * time.Millisecond},
		{"a hundred, p99", durations(100), 99, 100 * time.Millisecond},
		{"a thousand, p99", durations(1000), 99, 991 * time.Millisecond},
	} {
		if got := percentile(tc.d, tc.p); got != tc.want {
			t.Errorf("%s: percentile = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestFormats: durations in milliseconds to the hundredth (of whole
// microseconds), signed when a difference; sizes in MB to the tenth.
func TestFormats(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{ms(0), "0.00 ms"},
		{ms(1500 * time.Microsecond), "1.50 ms"},
		{ms(1234567 * time.Nanosecond), "1.23 ms"},
		{ms(999 * time.Nanosecond), "0.00 ms"},
		{ms(1236 * time.Microsecond), "1.24 ms"},
		{ms(2 * time.Second), "2000.00 ms"},
		{ms(-2 * time.Millisecond), "-2.00 ms"},
		{signedMs(0), "+0.00 ms"},
		{signedMs(500 * time.Microsecond), "+0.50 ms"},
		{signedMs(-1500 * time.Microsecond), "-1.50 ms"},
		{mb(0), "0.0 MB"},
		{mb(100), "0.0 MB"},
		{mb(1 << 20), "1.0 MB"},
		{mb(3 << 19), "1.5 MB"},
		{mb(30 << 20), "30.0 MB"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// TestCPUUsage: the client's CPU is a share of one core over the wall
// time measured, "-" when nothing was.
func TestCPUUsage(t *testing.T) {
	for _, tc := range []struct {
		u    cpuUsage
		want string
	}{
		{cpuUsage{}, "-"},
		{cpuUsage{cpu: time.Second}, "-"},
		{cpuUsage{wall: time.Second}, "0% of a core"},
		{cpuUsage{cpu: 50 * time.Millisecond, wall: 100 * time.Millisecond}, "50% of a core"},
		{cpuUsage{cpu: 1500 * time.Millisecond, wall: time.Second}, "150% of a core"},
		{cpuUsage{cpu: time.Millisecond, wall: 3 * time.Millisecond}, "33% of a core"},
	} {
		if got := tc.u.String(); got != tc.want {
			t.Errorf("cpu %v over %v: %q, want %q", tc.u.cpu, tc.u.wall, got, tc.want)
		}
	}
}

// TestLineCounter: whole lines that contain the text are counted, however
// the writes cut them; a line not yet ended is not.
func TestLineCounter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		want   int
	}{
		{"nothing", nil, 0},
		{"one line", []string{"level=INFO msg=waiting\n"}, 1},
		{"not ended", []string{"msg=waiting"}, 0},
		{"cut in the text", []string{"msg=wai", "ting\n"}, 1},
		{"cut at the end", []string{"msg=waiting", "\n"}, 1},
		{"other lines", []string{"msg=served\nmsg=waiting\nmsg=wait\n"}, 1},
		{"many in one write", []string{"msg=waiting 1\nmsg=waiting 2\nmsg=waiting 3"}, 2},
		{"once a line", []string{"msg=waiting msg=waiting\n"}, 1},
		{"empty lines", []string{"\n\n", "msg=waiting\n\n"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newLineCounter("msg=waiting")
			for _, w := range tc.writes {
				if n, err := c.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			if got := c.count(); got != tc.want {
				t.Errorf("count = %d, want %d", got, tc.want)
			}
			if err := c.waitPast(context.Background(), tc.want-1); err != nil { // already past: returns
				t.Errorf("waitPast(%d): %v", tc.want-1, err)
			}
		})
	}
}

// TestLineCounterWaitEnds: a wait for a line that never comes ends with
// its context, its error naming the line and the context's cause; a line
// that comes ends it with none.
func TestLineCounterWaitEnds(t *testing.T) {
	c := newLineCounter("msg=waiting")
	ctx, cancel := context.WithCancelCause(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.waitPast(ctx, 0) }()
	cancel(errors.New("aipm serve --http exited (exit status 1)"))
	select {
	case err := <-errc:
		want := `waiting for the server to log "msg=waiting": aipm serve --http exited (exit status 1)`
		if err == nil || err.Error() != want {
			t.Errorf("waitPast: %v, want %s", err, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waitPast did not end with its context")
	}
	go func() { errc <- c.waitPast(context.Background(), 0) }()
	c.Write([]byte("level=DEBUG msg=waiting\n"))
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("waitPast with the line written: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waitPast did not end with the line")
	}
}

// TestPeakRSS: a process's peak resident memory in MB, -1 for none.
func TestPeakRSS(t *testing.T) {
	if got := peakRSS(-1); got != -1 {
		t.Errorf("peakRSS of no process = %v, want -1", got)
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		testenv.SkipMissing(t, "/proc/self/status (Linux's procfs)")
	}
	if got := peakRSS(os.Getpid()); got <= 0 || got > 1<<20 {
		t.Errorf("peakRSS of this test = %v MB, want a size", got)
	}
}
