package fsstore

import (
	"path"
	"strings"
	"testing"
)

// globsMeet compares two one-name globs with the matcher.
func globsMeet(a, b string) bool {
	na, nb := compileLeaseName(a, true), compileLeaseName(b, true)
	return new(leaseMatcher).meet(&na, &nb)
}

// leasePatternsOverlap compares two clean patterns with the matcher.
func leasePatternsOverlap(a, b string) bool {
	ga, gb := compileLeaseGlob(a), compileLeaseGlob(b)
	return new(leaseMatcher).overlap(&ga, &gb)
}

func TestGlobsMeet(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"main.go", "main.go", true},
		{"main.go", "main.md", false},
		{"*.go", "main.go", true},
		{"*.go", "*.md", false},
		{"*.go", "a*", true}, // a.go
		{"a*", "b*", false},
		{"a*b", "*c", false},
		{"a*b", "a?b", true},
		{"a?c", "ab?", true},
		{"a?", "a", false},
		{"*", "x", true},
		{"*", "*", true},
		{"x*y*z", "*q*", true}, // xqyz
		{"?", "??", false},
		{"é*", "éa", true},
		{"?", "é", true},
		{"a*b*c", "a*c*b", false},
		{"ab*", "a*b", true}, // abb
		{"*x*", "*y*", true}, // xy
		{"*ab*ab*", "?b?a", false},
		{"*ab*ab*", "?b?a?", true}, // abaab
		{"a*", "?", true},
		{"a*a", "a", false},
		{"*aaaa*b", "aaaaaaab", true},
		{"*aaaa*b", "aaaaaaa", false},
		{"*" + strings.Repeat("?", 63) + "b*", strings.Repeat("a", 63) + "b", true},
		{"*" + strings.Repeat("a", 63) + "b*", strings.Repeat("a", 200), false},
	} {
		if got := globsMeet(tc.a, tc.b); got != tc.want {
			t.Errorf("globsMeet(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
		if got := globsMeet(tc.b, tc.a); got != tc.want {
			t.Errorf("globsMeet(%q, %q) = %v, want %v", tc.b, tc.a, got, tc.want)
		}
	}
}

func TestLeasePatternsOverlap(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"src", "src/main.go", true}, // a directory covers what is below it
		{"src/*.go", "src/main.go", true},
		{"src/*.go", "src/cmd/main.go", false},
		{"src/*", "src/cmd/main.go", true},
		{"src/a.go", "src/b.go", false},
		{"docs", "src", false},
		{"*/x.go", "a/*", true},
		{"a/*/c", "a/b/d", false},
	} {
		if got := leasePatternsOverlap(tc.a, tc.b); got != tc.want {
			t.Errorf("overlap(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
		if got := leasePatternsOverlap(tc.b, tc.a); got != tc.want {
			t.Errorf("overlap(%q, %q) = %v, want %v", tc.b, tc.a, got, tc.want)
		}
	}
}

func TestCleanLeasePattern(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		bad      bool
	}{
		{in: "./src/", want: "src"},
		{in: "src//a/../b.go", want: "src/b.go"},
		{in: "", bad: true},
		{in: "/etc/passwd", bad: true},
		{in: "../other", bad: true},
		{in: ".", bad: true},
		{in: ".ai-pm/config.toml", bad: true},
		{in: "src/[ab].go", bad: true},
		{in: "**/*.go", bad: true},
		{in: "src/**", want: "src"},
		{in: "./src/lib/**/", want: "src/lib"},
		{in: "src/**/**", want: "src"},
		{in: "**", bad: true},
		{in: "src/**/*.go", bad: true},
		{in: "src/a**", bad: true},
		{in: "src/" + strings.Repeat("*a", 128), bad: true}, // a name over 255 bytes
		{in: strings.Repeat("a", 255), want: strings.Repeat("a", 255)},
		{in: "s/" + strings.Repeat("a", 254), want: "s/" + strings.Repeat("a", 254)},
		{in: "s/" + strings.Repeat("a", 255), bad: true}, // over 256 bytes
		// The bounds of a pattern's cost (lease_bounds.go).
		{in: strings.Repeat("a/", maxLeaseNames-1) + "a", want: strings.Repeat("a/", maxLeaseNames-1) + "a"},
		{in: strings.Repeat("a/", maxLeaseNames) + "a", bad: true},
		{in: strings.Repeat("abc/", 40), bad: true}, // 160 bytes, but too deep
		{in: "src/" + strings.Repeat("*a", 32), want: "src/" + strings.Repeat("*a", 32)},
		{in: "src/" + strings.Repeat("*a", 32) + "*", bad: true}, // a glob name over 64 bytes
		{in: "src/" + strings.Repeat("?", 252), want: "src/" + strings.Repeat("?", 252)},
		{in: "src/a\x01.go", bad: true},
		{in: "src/a\n.go", bad: true},
		{in: "src/\xff.go", bad: true},
		{in: "src/\uFFFD.go", bad: true},
		{in: "src/ä.go", want: "src/ä.go"},
	} {
		got, err := cleanLeasePattern(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("cleanLeasePattern(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

// globsMeetDP is the dynamic programme aipm compared globs with before
// the linear matcher: quadratic in the names' lengths, and the reference
// the matcher must agree with. f[i][j] is whether p[i:] and q[j:] match a
// name in common, filled from the ends.
func globsMeetDP(p, q string) bool {
	pr, qr := []rune(p), []rune(q)
	f := make([][]bool, len(pr)+1)
	for i := range f {
		f[i] = make([]bool, len(qr)+1)
	}
	for i := len(pr); i >= 0; i-- {
		for j := len(qr); j >= 0; j-- {
			f[i][j] = globsMeetFrom(f, pr, qr, i, j)
		}
	}
	return f[0][0]
}

// globsMeetFrom is globsMeetDP's f[i][j], from the cells after it: a *
// matches nothing, or takes one more character that the other side
// produces (a literal, a ?, or the other's * taking it too).
func globsMeetFrom(f [][]bool, p, q []rune, i, j int) bool {
	n, m := len(p), len(q)
	switch {
	case i == n && j == m:
		return true
	case i < n && p[i] == '*' && f[i+1][j], j < m && q[j] == '*' && f[i][j+1]:
		return true
	case i == n || j == m:
		return false
	case p[i] == '*':
		return f[i][j+1] || q[j] == '*' && f[i+1][j]
	case q[j] == '*':
		return f[i+1][j]
	}
	return (p[i] == q[j] || p[i] == '?' || q[j] == '?') && f[i+1][j+1]
}

// checkMatcherAgrees fails t when the matcher and the references disagree
// on globs a and b: globsMeetDP for the names, path.Match when one has no
// wildcard (a file's name, covered or not).
func checkMatcherAgrees(t *testing.T, a, b string) {
	t.Helper()
	if got, want := globsMeet(a, b), globsMeetDP(a, b); got != want {
		t.Fatalf("globsMeet(%q, %q) = %v, the reference says %v", a, b, got, want)
	}
	if strings.ContainsAny(b, "*?") {
		return
	}
	pa, pb := compileLeaseGlob(a), compileLeasePath(b)
	want, _ := path.Match(a, b)
	if got := new(leaseMatcher).covers(&pa, &pb); got != want {
		t.Fatalf("covers(%q, %q) = %v, path.Match says %v", a, b, got, want)
	}
}

// The linear matcher agrees with the quadratic reference on every pair of
// short globs over a small alphabet (where the corner cases are), and
// with path.Match on every file name among them.
func TestLeaseMatcherAgrees(t *testing.T) {
	alphabet := []string{"a", "b", "é", "?", "*"}
	var names []string
	var grow func(prefix string, n int)
	grow = func(prefix string, n int) {
		if prefix != "" && !strings.Contains(prefix, "**") {
			names = append(names, prefix)
		}
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			grow(prefix+c, n-1)
		}
	}
	grow("", 4)
	for _, a := range names {
		for _, b := range names {
			checkMatcherAgrees(t, a, b)
		}
	}
}

// FuzzLeaseMatcher: any two names a lease may hold, the matcher agrees
// with the references.
func FuzzLeaseMatcher(f *testing.F) {
	for _, seed := range [][2]string{{"a*b", "ab"}, {"*é?*", "xéy"}, {"?*?", "**"}, {"*aa*ab", "aaab"}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if strings.Contains(a, "/") || strings.Contains(b, "/") {
			return
		}
		ca, errA := cleanLeasePattern(a)
		cb, errB := cleanLeasePattern(b)
		if errA != nil || errB != nil || ca != a || cb != b {
			return
		}
		checkMatcherAgrees(t, a, b)
		checkMatcherAgrees(t, b, a)
	})
}
