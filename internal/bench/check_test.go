package bench

import (
	"testing"
	"time"
)

// TestJudged: a row with checks is met when every check holds, not met
// when one does not; a bound is met on the limit and missed a nanosecond
// past it, as the targets' durations were compared before they were
// numbers.
func TestJudged(t *testing.T) {
	for _, tc := range []struct {
		name   string
		checks []check
		want   bool
	}{
		{"none", nil, true},
		{"at most, under", []check{atMost("p99", 0.5, 1, "ms")}, true},
		{"at most, on the limit", []check{atMost("p99", msOf(time.Millisecond), 1, "ms")}, true},
		{"at most, a nanosecond over", []check{atMost("p99", msOf(time.Millisecond+1), 1, "ms")}, false},
		{"at most 200 ms, a nanosecond over", []check{atMost("p99", msOf(200*time.Millisecond+1), 200, "ms")}, false},
		{"at least, over", []check{atLeast("aipm / floor", 0.7, 0.6, "x")}, true},
		{"at least, on the limit", []check{atLeast("aipm / floor", 0.6, 0.6, "x")}, true},
		{"at least, under", []check{atLeast("aipm / floor", 0.59, 0.6, "x")}, false},
		{"zero bytes", []check{atMost("bytes out", 0, 0, "bytes")}, true},
		{"one byte", []check{atMost("bytes out", 1, 0, "bytes")}, false},
		{"both hold", []check{atMost("p50", 10, 20, "ms"), atMost("p99", 90, 100, "ms")}, true},
		{"the second fails", []check{atMost("p50", 10, 20, "ms"), atMost("p99", 101, 100, "ms")}, false},
		{"the first fails", []check{atMost("p50 / floor p50", 1.6, 1.5, "x"), atMost("peak RSS", 20, 30, "MB")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Row{id: "P0", met: !tc.want}.judged(tc.checks...)
			if r.met != tc.want {
				t.Errorf("met = %v, want %v", r.met, tc.want)
			}
			if len(r.checks) != len(tc.checks) {
				t.Errorf("%d checks kept of %d", len(r.checks), len(tc.checks))
			}
			checks := r.JSON()["checks"].([]checkJSON)
			for i, c := range tc.checks {
				if got := checks[i]; got.Met != c.holds() || got.Op != c.op || got.Value != c.value || got.Limit != c.limit || got.Unit != c.unit || got.Of != c.of {
					t.Errorf("check %d as JSON: %+v, from %+v", i, got, c)
				}
			}
		})
	}
}

// TestValues: the numbers of latencies and throughputs, named with their
// unit.
func TestValues(t *testing.T) {
	d := durations(100) // 1 ms to 100 ms
	for _, tc := range []struct {
		name string
		got  values
		want values
	}{
		{"latencies", latencies(d), values{"p50_ms": 51, "p99_ms": 100}},
		{"median", median(d), values{"p50_ms": 51}},
		{"none", latencies(nil), values{"p50_ms": 0, "p99_ms": 0}},
		{"throughput", throughputOf(1234.5), values{"msg_per_s": 1234.5}},
	} {
		if len(tc.got) != len(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.got, tc.want)
		}
		for k, v := range tc.want {
			if tc.got[k] != v {
				t.Errorf("%s: %v, want %v", tc.name, tc.got, tc.want)
			}
		}
	}
	if got := mbOf(3 << 19); got != 1.5 {
		t.Errorf("mbOf(1.5 MB) = %v", got)
	}
}
