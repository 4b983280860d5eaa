package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// aipm version alone (isPlainVersion) prints what the whole tree prints,
// and only a plain version takes that path.
func TestPlainVersion(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		plain bool
	}{
		{[]string{"version"}, true},
		{[]string{"version", "--json"}, true},
		{[]string{"version", "--json=false"}, true},
		{[]string{"--dir", "/p", "version"}, true},
		{[]string{"--utc", "version", "--dir=/p", "--json"}, true},
		{[]string{"--dir", "version", "version"}, true},
		{[]string{"--json", "version"}, false},
		{[]string{"version", "--json", "x"}, false},
		{[]string{"version", "extra"}, false},
		{[]string{"version", "version"}, false},
		{[]string{"version", "--help"}, false},
		{[]string{"help", "version"}, false},
		{[]string{"version", "--bogus"}, false},
		{[]string{"--dir", "version"}, false},
		{[]string{"--version"}, false},
		{[]string{"serve"}, false},
		{nil, false},
	} {
		if got := isPlainVersion(tc.args); got != tc.plain {
			t.Errorf("isPlainVersion(%q) = %v, want %v", tc.args, got, tc.plain)
			continue
		}
		if !tc.plain {
			continue
		}
		whole, wholeErr := printVersion(tc.args, newCmdRoot)
		alone, aloneErr := printVersion(tc.args, func(e *env) *cobra.Command {
			root := newRoot(e)
			root.AddCommand(newCmdVersion(e))
			return root
		})
		if whole != alone || fmt.Sprint(wholeErr) != fmt.Sprint(aloneErr) {
			t.Errorf("%q: the whole tree printed %q (%v), version alone %q (%v)", tc.args, whole, wholeErr, alone, aloneErr)
		}
		if !strings.Contains(whole, "go1") {
			t.Errorf("%q: the whole tree printed no version: %q (%v)", tc.args, whole, wholeErr)
		}
	}
}

// printVersion executes args on the tree that build makes and returns
// what it printed.
func printVersion(args []string, build func(*env) *cobra.Command) (string, error) {
	var out bytes.Buffer
	e := newEnv(func(string) string { return "" }, strings.NewReader(""), &out, &out)
	root := build(e)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}
