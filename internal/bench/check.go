package bench

import "time"

// A check is one condition of a row's target, as numbers a machine can
// check again: value op limit, both in unit ("ms", "MB", "KB", "bytes",
// or "x" for a ratio); of names what value is ("p99 - floor p99"). A row
// with checks meets its target when every one holds (Row.judged).
type check struct {
	of, op, unit string
	value, limit float64
}

// atMost is the check value <= limit.
func atMost(of string, value, limit float64, unit string) check {
	return check{of: of, op: "<=", unit: unit, value: value, limit: limit}
}

// atLeast is the check value >= limit.
func atLeast(of string, value, limit float64, unit string) check {
	return check{of: of, op: ">=", unit: unit, value: value, limit: limit}
}

func (c check) holds() bool {
	if c.op == ">=" {
		return c.value >= c.limit
	}
	return c.value <= c.limit
}

// checkJSON is a check as --json prints it, keys in this order.
type checkJSON struct {
	Of    string  `json:"of"`
	Value float64 `json:"value"`
	Op    string  `json:"op"`
	Limit float64 `json:"limit"`
	Unit  string  `json:"unit"`
	Met   bool    `json:"met"`
}

func (c check) json() checkJSON {
	return checkJSON{Of: c.of, Value: c.value, Op: c.op, Limit: c.limit, Unit: c.unit, Met: c.holds()}
}

// judged is r with its target's checks, met when every one holds.
func (r Row) judged(checks ...check) Row {
	r.checks = checks
	r.met = true
	for _, c := range checks {
		r.met = r.met && c.holds()
	}
	return r
}

// values are a row's measured numbers, each named with its unit
// ("p50_ms"), as --json prints them beside the text.
type values map[string]float64

// msOf is d in milliseconds. For whole nanoseconds, msOf(d) <= k holds
// exactly when d <= k ms (for the limits the targets use).
func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// mbOf is n bytes in MB (exact: a power of two).
func mbOf(n int64) float64 { return float64(n) / (1 << 20) }

// latencies are the p50 and p99 of sorted durations, in milliseconds.
func latencies(d []time.Duration) values {
	return values{"p50_ms": msOf(percentile(d, 50)), "p99_ms": msOf(percentile(d, 99))}
}

// median is the p50 of sorted durations, in milliseconds.
func median(d []time.Duration) values { return values{"p50_ms": msOf(percentile(d, 50))} }

// throughputOf is a throughput in messages a second.
func throughputOf(perSecond float64) values { return values{"msg_per_s": perSecond} }
