package bench

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Check refuses an Options.Only that names no target (ErrUnknownTarget),
// before anything is measured or built.
func Check(only []string) error {
	_, err := (&bench{}).measures(only)
	return err
}

// compareIDs orders row ids by their target's number, then the row's
// letters: P1, P1i, P1r, P2, ..., P9c, P10h1, P12a.
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

// A target is one measurement: the names --only runs it for, the rows it
// gives (each given not met, with the reason, when it fails or passes its
// deadline), what it measures in a few words (those rows' what), and its
// deadline in a full run (--quick's is quickTimeout).
type target struct {
	names   []string
	rows    []string
	what    string
	timeout time.Duration
	run     func(*bench) ([]Row, error)
}

// quickTimeout is every target's deadline in a --quick run, whose targets
// each take seconds.
const quickTimeout = 2 * time.Minute

// targets are the measurements, in the order they run. Their deadlines are
// many times what each takes on a busy machine: the measurements of a
// million lines of history (P3, P3c, P6a, P6g, P6h, P9b) get more.
func targets() []target {
	const short, long = 10 * time.Minute, 20 * time.Minute
	return []target{
		{[]string{"P1"}, []string{"P1", "P1i", "P1r"}, "delivery and interrupt between two aipm serve processes", short, (*bench).delivery},
		{[]string{"P2"}, []string{"P2", "P2rpc"}, "send_message throughput, 8 servers", short, (*bench).throughput},
		{[]string{"P3", "P5"}, []string{"P3", "P5"}, "get_pending_messages and memory with a long history", long, (*bench).history1M},
		{[]string{"P3", "P3C", "P3S"}, []string{"P3c", "P3s"}, "get_pending_messages and size after compaction", long, (*bench).compacted},
		{[]string{"P4"}, []string{"P4", "P4v"}, "aipm serve start -> first authenticate; aipm version", short, (*bench).startup},
		{[]string{"P6", "P6A"}, []string{"P6a"}, "get_next_action over own sent copies", long, (*bench).ownSent},
		{[]string{"P6", "P6B"}, []string{"P6b"}, "gated call with unread notifications", short, (*bench).unreadNotifications},
		{[]string{"P6", "P6C"}, []string{"P6c"}, "list_tasks among tasks", short, (*bench).listTasks},
		{[]string{"P6", "P6D"}, []string{"P6d"}, "get_task among tasks", short, (*bench).myTask},
		{[]string{"P6", "P6E"}, []string{"P6e"}, "authenticate among tasks", short, (*bench).authTasks},
		{[]string{"P6", "P6F"}, []string{"P6f"}, "authenticate among other agents' sessions", short, (*bench).authSessions},
		{[]string{"P6", "P6G"}, []string{"P6g"}, "authenticate over own sent copies", long, (*bench).authOwnSent},
		{[]string{"P6", "P6H"}, []string{"P6h"}, "get_next_action over own sent copies, compacted", long, (*bench).ownSentCompacted},
		{[]string{"P7"}, []string{"P7a", "P7b"}, "aipm watch: trigger written, agent started", short, (*bench).watchBench},
		{[]string{"P8", "P8A"}, []string{"P8a", "P8a1"}, "hook wall time", short, (*bench).hookWallTime},
		{[]string{"P8", "P8B"}, []string{"P8b"}, "append -> asyncRewake hook exits", short, (*bench).hookWake},
		{[]string{"P9", "P9A"}, []string{"P9a"}, "file append -> DOM updated in the browser", short, (*bench).webLive},
		{[]string{"P9", "P9B"}, []string{"P9b"}, "first render with a long history", long, (*bench).webFirstRender},
		{[]string{"P9", "P9C"}, []string{"P9c"}, "page weight", short, (*bench).webWeight},
		{[]string{"P10", "P10S1", "P10H1"}, []string{"P10h1", "P10s1"}, "P1 over ssh and http", long, (*bench).remoteDelivery},
		{[]string{"P10", "P10S2", "P10H2"}, []string{"P10h2", "P10s2"}, "P2 over ssh and http", long, (*bench).remoteThroughput},
		{[]string{"P12", "P12A"}, []string{"P12a"}, "aipm watch: blocker done -> the dependent's trigger written", short, (*bench).flowTrigger},
		{[]string{"P12", "P12R", "P12W"}, []string{"P12r", "P12w"}, "ready and waiting lists among tasks", short, (*bench).readyLists},
	}
}

// measures returns the targets named in only (all of them when only is
// empty), in the order they run. A target is named by its DESIGN id; a
// measurement that also yields another row runs when the targets listed
// beside it are named: P3 gives P5 and runs for either, P1 also gives P1r
// and P2 gives P2rpc (named as P1 and P2).
func (b *bench) measures(only []string) ([]target, error) {
	all := targets()
	want := map[string]bool{}
	for _, id := range only {
		id = strings.ToUpper(strings.TrimSpace(id))
		known := false
		for _, m := range all {
			known = known || slices.Contains(m.names, id)
		}
		if !known {
			return nil, fmt.Errorf("--only %q: %w; name some of P1 to P10 or P12, or a P3, P6, P8, P9, P10 or P12 row (P3c, P3s, P6a to P6h, P8a, P8b, P9a to P9c, P10s1, P10s2, P10h1, P10h2, P12a, P12r, P12w)", id, ErrUnknownTarget)
		}
		want[id] = true
	}
	var runs []target
	for _, m := range all {
		if len(want) == 0 || slices.ContainsFunc(m.names, func(id string) bool { return want[id] }) {
			runs = append(runs, m)
		}
	}
	return runs, nil
}
