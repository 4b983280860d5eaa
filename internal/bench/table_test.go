package bench

import (
	"encoding/json"
	"strings"
	"testing"
)

// met and unmet are two rows of different widths: one met with the
// client's CPU, one not met without it.
var (
	met = Row{
		id: "P1", what: "delivery p50/p99", aipm: "0.42 ms / 0.90 ms", floor: "0.30 ms / 0.61 ms",
		compared: "p99 +0.29 ms", target: "p99 <= floor + 1 ms", cpu: "12% of a core",
		aipmValues: values{"p50_ms": 0.42, "p99_ms": 0.9}, floorValues: values{"p50_ms": 0.3, "p99_ms": 0.61},
	}.judged(atMost("p99 - floor p99", 0.29, 1, "ms"))
	unmet = Row{
		id: "P10h2", what: "P2 over http", aipm: "900 msg/s", floor: "local 1000 msg/s",
		compared: "90% of local", target: ">= 50% of local",
	}
)

// TestWriteTable: the header, then one line a row in the order given, each
// column as wide as its widest cell and two spaces from the next; met is
// "yes" or "NO"; a row without the client's CPU shows "-".
func TestWriteTable(t *testing.T) {
	const header = "id     what              aipm               raw floor          compared      target               met  client cpu\n"
	for _, tc := range []struct {
		name string
		rows []Row
		want string
	}{
		{"no rows", nil, "id  what  aipm  raw floor  compared  target  met  client cpu\n"},
		{"met and not", []Row{met, unmet}, header +
			"P1     delivery p50/p99  0.42 ms / 0.90 ms  0.30 ms / 0.61 ms  p99 +0.29 ms  p99 <= floor + 1 ms  yes  12% of a core\n" +
			"P10h2  P2 over http      900 msg/s          local 1000 msg/s   90% of local  >= 50% of local      NO   -\n"},
		{"order kept", []Row{unmet, met}, header +
			"P10h2  P2 over http      900 msg/s          local 1000 msg/s   90% of local  >= 50% of local      NO   -\n" +
			"P1     delivery p50/p99  0.42 ms / 0.90 ms  0.30 ms / 0.61 ms  p99 +0.29 ms  p99 <= floor + 1 ms  yes  12% of a core\n"},
		{"a target that did not finish", notMeasured(target{rows: []string{"P10h1"}, what: "P1 over http"}, `did not finish in 2m0s: waiting for the server to log "msg=waiting"`),
			"id     what          aipm                                                                               raw floor  compared  target  met  client cpu\n" +
				`P10h1  P1 over http  not measured: did not finish in 2m0s: waiting for the server to log "msg=waiting"  -          -         -       NO   -` + "\n"},
		{"a missing link", missingLinks(map[string]string{"ssh": "no sshd"}, "1", "P1"),
			"id     what                  aipm  raw floor  compared  target    met  client cpu\n" +
				"P10s1  P1 over ssh: no sshd  -     -          -         measured  NO   -\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			if err := WriteTable(&out, tc.rows); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("WriteTable printed\n%s\nwant\n%s", out.String(), tc.want)
			}
		})
	}
}

// TestCells: a row's cells are in Header's order, one for each column.
func TestCells(t *testing.T) {
	for _, tc := range []struct {
		row  Row
		want []string
	}{
		{met, []string{"P1", "delivery p50/p99", "0.42 ms / 0.90 ms", "0.30 ms / 0.61 ms", "p99 +0.29 ms", "p99 <= floor + 1 ms", "yes", "12% of a core"}},
		{unmet, []string{"P10h2", "P2 over http", "900 msg/s", "local 1000 msg/s", "90% of local", ">= 50% of local", "NO", "-"}},
	} {
		got := tc.row.Cells()
		if len(got) != len(Header) {
			t.Errorf("%s: %d cells for %d columns", tc.row.id, len(got), len(Header))
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s: cells %q, want %q", tc.row.id, got, tc.want)
		}
	}
}

// TestWriteJSON: --json prints an array of objects, keys in order and
// indented, met a boolean, the client's CPU empty when not measured, and
// "<=" and ">=" as they are (no HTML escapes).
func TestWriteJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		rows []Row
		want string
	}{
		{"no rows", nil, "[]\n"},
		{"met and not", []Row{met, unmet}, `[
  {
    "aipm": "0.42 ms / 0.90 ms",
    "aipm_values": {
      "p50_ms": 0.42,
      "p99_ms": 0.9
    },
    "checks": [
      {
        "of": "p99 - floor p99",
        "value": 0.29,
        "op": "<=",
        "limit": 1,
        "unit": "ms",
        "met": true
      }
    ],
    "client_cpu": "12% of a core",
    "compared": "p99 +0.29 ms",
    "error": "",
    "floor": "0.30 ms / 0.61 ms",
    "floor_values": {
      "p50_ms": 0.3,
      "p99_ms": 0.61
    },
    "id": "P1",
    "met": true,
    "target": "p99 <= floor + 1 ms",
    "what": "delivery p50/p99"
  },
  {
    "aipm": "900 msg/s",
    "aipm_values": {},
    "checks": [],
    "client_cpu": "",
    "compared": "90% of local",
    "error": "",
    "floor": "local 1000 msg/s",
    "floor_values": {},
    "id": "P10h2",
    "met": false,
    "target": ">= 50% of local",
    "what": "P2 over http"
  }
]
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			if err := WriteJSON(&out, tc.rows); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("WriteJSON printed\n%s\nwant\n%s", out.String(), tc.want)
			}
			var rows []map[string]any
			if err := json.Unmarshal([]byte(out.String()), &rows); err != nil || len(rows) != len(tc.rows) {
				t.Errorf("WriteJSON's output decodes to %d rows (%v), want %d", len(rows), err, len(tc.rows))
			}
		})
	}
}
