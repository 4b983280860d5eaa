package bench

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Check refuses an Options.Only that names no target (ErrUnknownTarget),
// before anything is measured or built.
func Check(only []string) error {
	_, err := (&bench{}).measures(only)
	return err
}

// compareIDs orders row ids by their target's number, then the row's
// letters: P1, P1i, P1r, P2, ..., P9c, P10h1.
func compareIDs(a, b string) int {
	num := func(id string) (int, string) {
		i := 1
		for i < len(id) && id[i] >= '0' && id[i] <= '9' {
			i++
		}
		n, _ := strconv.Atoi(id[1:i])
		return n, id[i:]
	}
	na, ra := num(a)
	nb, rb := num(b)
	if na != nb {
		return na - nb
	}
	return strings.Compare(ra, rb)
}

// measures returns the measurements of the targets named in only (all of
// them when only is empty), in the order they run. A target is named by its
// DESIGN id; a measurement that also yields another row runs when the
// targets listed beside it are named: P3 gives P5 and runs for either,
// P1 also gives P1r and P2 gives P2rpc (named as P1 and P2).
func (b *bench) measures(only []string) ([]func() ([]Row, error), error) {
	all := []struct {
		targets []string
		run     func() ([]Row, error)
	}{
		{[]string{"P1"}, b.delivery},
		{[]string{"P2"}, b.throughput},
		{[]string{"P3", "P5"}, b.history1M},
		{[]string{"P3", "P3C", "P3S"}, b.compacted},
		{[]string{"P4"}, b.startup},
		{[]string{"P6", "P6A"}, b.ownSent},
		{[]string{"P6", "P6B"}, b.unreadNotifications},
		{[]string{"P6", "P6C"}, b.listTasks},
		{[]string{"P6", "P6D"}, b.myTask},
		{[]string{"P6", "P6E"}, b.authTasks},
		{[]string{"P6", "P6F"}, b.authSessions},
		{[]string{"P6", "P6G"}, b.authOwnSent},
		{[]string{"P6", "P6H"}, b.ownSentCompacted},
		{[]string{"P7"}, b.watchBench},
		{[]string{"P8", "P8A"}, b.hookWallTime},
		{[]string{"P8", "P8B"}, b.hookWake},
		{[]string{"P9", "P9A"}, b.webLive},
		{[]string{"P9", "P9B"}, b.webFirstRender},
		{[]string{"P9", "P9C"}, b.webWeight},
		{[]string{"P10", "P10S1", "P10H1"}, b.remoteDelivery},
		{[]string{"P10", "P10S2", "P10H2"}, b.remoteThroughput},
	}
	want := map[string]bool{}
	for _, id := range only {
		id = strings.ToUpper(strings.TrimSpace(id))
		known := false
		for _, m := range all {
			known = known || slices.Contains(m.targets, id)
		}
		if !known {
			return nil, fmt.Errorf("--only %q: %w; name some of P1 to P10, or a P3, P6, P8, P9 or P10 row (P3c, P3s, P6a to P6h, P8a, P8b, P9a to P9c, P10s1, P10s2, P10h1, P10h2)", id, ErrUnknownTarget)
		}
		want[id] = true
	}
	var runs []func() ([]Row, error)
	for _, m := range all {
		if len(want) == 0 || slices.ContainsFunc(m.targets, func(id string) bool { return want[id] }) {
			runs = append(runs, m.run)
		}
	}
	return runs, nil
}
