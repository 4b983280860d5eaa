package table

import (
	"strings"
	"testing"
	"time"
)

// TestShortIDs: the shortest start no other id shares, never under 8
// characters after the prefix, and the whole id when it must.
func TestShortIDs(t *testing.T) {
	for _, tc := range []struct {
		name string
		ids  []string
		want map[string]string
	}{
		{"none", nil, map[string]string{}},
		{"one", []string{"tsk_01M8A61Z7A2HJ2E0DXX0S21N5S"}, map[string]string{
			"tsk_01M8A61Z7A2HJ2E0DXX0S21N5S": "tsk_01M8A61Z"}},
		{"apart early: the floor", []string{"tsk_01M8A61Z7A2HJ2E0DXX0S21N5S", "tsk_01M7000000000000000000000Q"}, map[string]string{
			"tsk_01M8A61Z7A2HJ2E0DXX0S21N5S": "tsk_01M8A61Z",
			"tsk_01M7000000000000000000000Q": "tsk_01M70000"}},
		{"same second: one past the shared part", []string{"tsk_01M8A61Z7A2HJ2E0DXX0S21N5S", "tsk_01M8A61Z7BXXXXXXXXXXXXXXXX", "tsk_01M8A61Z7A3000000000000000"}, map[string]string{
			"tsk_01M8A61Z7A2HJ2E0DXX0S21N5S": "tsk_01M8A61Z7A2",
			"tsk_01M8A61Z7A3000000000000000": "tsk_01M8A61Z7A3",
			"tsk_01M8A61Z7BXXXXXXXXXXXXXXXX": "tsk_01M8A61Z7B"}},
		{"last character: the whole id", []string{"cnv_01KAKZ00000000000000000001", "cnv_01KAKZ00000000000000000002"}, map[string]string{
			"cnv_01KAKZ00000000000000000001": "cnv_01KAKZ00000000000000000001",
			"cnv_01KAKZ00000000000000000002": "cnv_01KAKZ00000000000000000002"}},
		{"a duplicate counts once", []string{"dlg_01KAKZ00000000000000000001", "dlg_01KAKZ00000000000000000001"}, map[string]string{
			"dlg_01KAKZ00000000000000000001": "dlg_01KAKZ00"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ShortIDs(tc.ids)
			if len(got) != len(tc.want) {
				t.Fatalf("ShortIDs(%q) = %q, want %q", tc.ids, got, tc.want)
			}
			for id, want := range tc.want {
				if got[id] != want {
					t.Errorf("ShortIDs: %s -> %q, want %q", id, got[id], want)
				}
			}
		})
	}
}

// TestAgeText: whole units, floored; a date from a week on; a future time
// is 0s ago.
func TestAgeText(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	tokyo := time.FixedZone("JST", 9*3600)
	for _, tc := range []struct {
		ago  time.Duration
		loc  *time.Location
		want string
	}{
		{0, time.UTC, "0s ago"},
		{-5 * time.Minute, time.UTC, "0s ago"},
		{999 * time.Millisecond, time.UTC, "0s ago"},
		{59 * time.Second, time.UTC, "59s ago"},
		{time.Minute, time.UTC, "1m ago"},
		{59*time.Minute + 59*time.Second, time.UTC, "59m ago"},
		{time.Hour, time.UTC, "1h ago"},
		{23*time.Hour + 59*time.Minute, time.UTC, "23h ago"},
		{24 * time.Hour, time.UTC, "1d ago"},
		{7*24*time.Hour - time.Second, time.UTC, "6d ago"},
		{7 * 24 * time.Hour, time.UTC, "2026-11-18"},
		{400 * 24 * time.Hour, time.UTC, "2025-10-21"},
		{7*24*time.Hour + 13*time.Hour, time.UTC, "2026-11-17"},
		{7*24*time.Hour + 13*time.Hour, tokyo, "2026-11-18"},
	} {
		if got := Age(now.Add(-tc.ago), now, tc.loc); got != tc.want {
			t.Errorf("Age(now-%v, %v) = %q, want %q", tc.ago, tc.loc, got, tc.want)
		}
	}
	if got := Age(time.Time{}, now, time.UTC); got != "-" {
		t.Errorf("Age(zero) = %q, want -", got)
	}
}

// TestByteSize: bytes whole under a KiB, then one decimal of the largest
// binary unit.
func TestByteSize(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{1023, "1023 B"},
		{1024, "1.0 KiB"},
		{3482, "3.4 KiB"},
		{12 << 20, "12.0 MiB"},
		{1<<30 - 1, "1024.0 MiB"},
		{5 << 40, "5.0 TiB"},
	} {
		if got := ByteSize(tc.n); got != tc.want {
			t.Errorf("ByteSize(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

// TestTableCut: the cut column gives way so that no line is wider than
// the width, down to minCut; other columns never change; no width, no cut.
func TestTableCut(t *testing.T) {
	mk := func() *Table {
		tab := &Table{Header: []string{"ID", "TITLE"}, Cut: 1}
		tab.Add("tsk_01", "a title of exactly thirty-two ch")
		tab.Add("tsk_02", "short")
		return tab
	}
	for _, tc := range []struct {
		width int
		want  string
	}{
		{0, "ID      TITLE\ntsk_01  a title of exactly thirty-two ch\ntsk_02  short\n"},
		{40, "ID      TITLE\ntsk_01  a title of exactly thirty-two ch\ntsk_02  short\n"},
		{30, "ID      TITLE\ntsk_01  a title of exactly th…\ntsk_02  short\n"},
		{10, "ID      TITLE\ntsk_01  a title of…\ntsk_02  short\n"},
	} {
		var b strings.Builder
		if err := mk().Print(&b, false, tc.width); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("width %d:\n%s\nwant\n%s", tc.width, b.String(), tc.want)
		}
	}
	if got := CutText("りんごりんご", 4); got != "りんご…" {
		t.Errorf("CutText counts characters, not bytes: %q", got)
	}
}

// TestOutputWidth: $COLUMNS, else no limit for what is not a terminal.
func TestOutputWidth(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string { return map[string]string{"COLUMNS": v}[k] }
	}
	var b strings.Builder
	for v, want := range map[string]int{"": 0, "100": 100, "0": 0, "-3": 0, "wide": 0} {
		if got := Width(env(v), &b); got != want {
			t.Errorf("COLUMNS=%q: width %d, want %d", v, got, want)
		}
	}
}
