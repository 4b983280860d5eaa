package fsstore

import (
	"strings"
	"testing"
)

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
		{in: "src/" + strings.Repeat("a", 255), want: "src/" + strings.Repeat("a", 255)},
	} {
		got, err := cleanLeasePattern(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("cleanLeasePattern(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.bad)
		}
	}
}
