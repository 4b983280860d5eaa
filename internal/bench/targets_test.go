package bench

import (
	"errors"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMeasures: the measurements that run for the targets named, in the
// order they run; a name is a target or a row of one, in either case and
// with spaces around it; P1r and P2rpc come with P1 and P2 and are not
// names.
func TestMeasures(t *testing.T) {
	all := []string{
		"delivery", "throughput", "history1M", "compacted", "startup",
		"ownSent", "unreadNotifications", "listTasks", "myTask", "authTasks", "authSessions", "authOwnSent", "ownSentCompacted",
		"watchBench", "hookWallTime", "hookWake", "webLive", "webFirstRender", "webWeight", "remoteDelivery", "remoteThroughput",
		"flowTrigger", "readyLists",
	}
	for _, tc := range []struct {
		only []string
		want []string // the measurements' names, or nil for ErrUnknownTarget
	}{
		{nil, all},
		{[]string{}, all},
		{[]string{"P4"}, []string{"startup"}},
		{[]string{"p4"}, []string{"startup"}},
		{[]string{" P4 "}, []string{"startup"}},
		{[]string{"P4", "P1"}, []string{"delivery", "startup"}},
		{[]string{"P4", "P4"}, []string{"startup"}},
		{[]string{"P3"}, []string{"history1M", "compacted"}},
		{[]string{"P5"}, []string{"history1M"}},
		{[]string{"P3c"}, []string{"compacted"}},
		{[]string{"P3S"}, []string{"compacted"}},
		{[]string{"P6"}, []string{"ownSent", "unreadNotifications", "listTasks", "myTask", "authTasks", "authSessions", "authOwnSent", "ownSentCompacted"}},
		{[]string{"P6c", "P6d"}, []string{"listTasks", "myTask"}},
		{[]string{"P7"}, []string{"watchBench"}},
		{[]string{"P8"}, []string{"hookWallTime", "hookWake"}},
		{[]string{"P8b"}, []string{"hookWake"}},
		{[]string{"P9"}, []string{"webLive", "webFirstRender", "webWeight"}},
		{[]string{"P9c"}, []string{"webWeight"}},
		{[]string{"P10"}, []string{"remoteDelivery", "remoteThroughput"}},
		{[]string{"p10s1"}, []string{"remoteDelivery"}},
		{[]string{"P10H2"}, []string{"remoteThroughput"}},
		{[]string{"P12"}, []string{"flowTrigger", "readyLists"}},
		{[]string{"p12a"}, []string{"flowTrigger"}},
		{[]string{"P12w", "P12R"}, []string{"readyLists"}},
		{[]string{"P11"}, nil},
		{[]string{"P4", "P11"}, nil},
		{[]string{"P1r"}, nil},
		{[]string{"P2rpc"}, nil},
		{[]string{"P7a"}, nil},
		{[]string{""}, nil},
		{[]string{"4"}, nil},
	} {
		t.Run(strings.Join(tc.only, ","), func(t *testing.T) {
			runs, err := (&bench{}).measures(tc.only)
			if tc.want == nil {
				if !errors.Is(err, ErrUnknownTarget) {
					t.Errorf("measures(%q): %d runs, error %v, want ErrUnknownTarget", tc.only, len(runs), err)
				}
				if !errors.Is(Check(tc.only), ErrUnknownTarget) {
					t.Errorf("Check(%q) = %v, want ErrUnknownTarget", tc.only, Check(tc.only))
				}
				return
			}
			if err != nil || Check(tc.only) != nil {
				t.Fatalf("measures(%q): %v; Check: %v", tc.only, err, Check(tc.only))
			}
			var got []string
			for _, run := range runs {
				got = append(got, methodName(run.run))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("measures(%q) runs %q, want %q", tc.only, got, tc.want)
			}
		})
	}
}

// TestCheckMessage: the refusal names the target as it was given, upper
// case, and the names there are.
func TestCheckMessage(t *testing.T) {
	err := Check([]string{"p4", "p11"})
	want := `--only "P11": no such target; name some of P1 to P10 or P12, or a P3, P6, P8, P9, P10 or P12 row (P3c, P3s, P6a to P6h, P8a, P8b, P9a to P9c, P10s1, P10s2, P10h1, P10h2, P12a, P12r, P12w)`
	if err == nil || err.Error() != want {
		t.Errorf("Check: %v, want %s", err, want)
	}
}

// methodName is the name of the method a method expression calls
// ((*bench).delivery: "delivery").
func methodName(f func(*bench) ([]Row, error)) string {
	name := runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name()
	return strings.TrimSuffix(name[strings.LastIndex(name, ".")+1:], "-fm")
}

// TestCompareIDs: rows sort by their target's number, then by the row's
// letters and digits, whatever order they come in.
func TestCompareIDs(t *testing.T) {
	want := []string{"P1", "P1i", "P1r", "P2", "P2rpc", "P3", "P3c", "P3s", "P4", "P5", "P6a", "P6h", "P7a", "P7b", "P8a", "P8a1", "P8b", "P9a", "P9c", "P10h1", "P10h2", "P10s1", "P10s2", "P12a", "P12r", "P12w"}
	reversed := slices.Clone(want)
	slices.Reverse(reversed)
	// by string order P10 comes before P2: sorted as text, the order is wrong
	text := slices.Sorted(slices.Values(want))
	for _, tc := range []struct {
		name string
		ids  []string
	}{
		{"sorted", slices.Clone(want)},
		{"reversed", reversed},
		{"as text", text},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slices.SortFunc(tc.ids, compareIDs)
			if !slices.Equal(tc.ids, want) {
				t.Errorf("sorted %q, want %q", tc.ids, want)
			}
		})
	}
	for _, tc := range []struct {
		a, b string
		sign int
	}{
		{"P1", "P1", 0},
		{"P2", "P10", -1},
		{"P10h1", "P9c", 1},
		{"P1", "P1r", -1},
		{"P8a1", "P8a", 1},
	} {
		if got := compareIDs(tc.a, tc.b); sign(got) != tc.sign {
			t.Errorf("compareIDs(%q, %q) = %d, want the sign %d", tc.a, tc.b, got, tc.sign)
		}
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

// TestTargets: every target has a deadline of minutes, says what it
// measures, and names its rows, each row given by one target only and
// run for a name of its own target (P3c by P3c or P3).
func TestTargets(t *testing.T) {
	seen := map[string]string{}
	for _, tg := range targets() {
		name := methodName(tg.run)
		if tg.timeout < 5*time.Minute || tg.timeout < quickTimeout || tg.what == "" || len(tg.rows) == 0 || len(tg.names) == 0 {
			t.Errorf("%s: deadline %s, what %q, rows %q, names %q", name, tg.timeout, tg.what, tg.rows, tg.names)
		}
		for _, id := range tg.rows {
			if other, ok := seen[id]; ok {
				t.Errorf("row %s given by %s and %s", id, other, name)
			}
			seen[id] = name
			family := id[:2]
			if len(id) > 2 && id[2] >= '0' && id[2] <= '9' {
				family = id[:3] // P10, P12
			}
			if !slices.Contains(tg.names, family) && !slices.Contains(tg.names, strings.ToUpper(id)) {
				t.Errorf("row %s of %s runs for neither %s nor %s: %q", id, name, family, strings.ToUpper(id), tg.names)
			}
		}
	}
}
