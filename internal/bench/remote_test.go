package bench

import (
	"slices"
	"testing"
)

// TestMissingLinks: a link that cannot run here has a row of its own,
// named by the link's initial and the suffix, saying why, not met.
func TestMissingLinks(t *testing.T) {
	for _, tc := range []struct {
		name         string
		missing      map[string]string
		suffix, what string
		want         [][]string // the rows' cells, in id order
	}{
		{"none", nil, "1", "P1", nil},
		{"ssh", map[string]string{"ssh": "no sshd"}, "1", "P1", [][]string{
			{"P10s1", "P1 over ssh: no sshd", "-", "-", "-", "measured", "NO", "-"},
		}},
		{"both", map[string]string{"ssh": "no sshd", "http": "no port"}, "2", "P2", [][]string{
			{"P10h2", "P2 over http: no port", "-", "-", "-", "measured", "NO", "-"},
			{"P10s2", "P2 over ssh: no sshd", "-", "-", "-", "measured", "NO", "-"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := missingLinks(tc.missing, tc.suffix, tc.what)
			slices.SortFunc(rows, func(a, b Row) int { return compareIDs(a.id, b.id) })
			var got [][]string
			for _, r := range rows {
				got = append(got, r.Cells())
			}
			if !slices.EqualFunc(got, tc.want, slices.Equal) {
				t.Errorf("rows %q, want %q", got, tc.want)
			}
		})
	}
}
