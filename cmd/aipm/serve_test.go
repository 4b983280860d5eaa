package main

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestPlainServe: the arguments that take the serve-only tree are exactly
// ones with which the whole tree runs serve, with the same flags and the
// same outcome; every other form takes the whole tree.
func TestPlainServe(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		plain bool
	}{
		{[]string{"serve"}, true},
		{[]string{"--dir", "/p", "serve"}, true},
		{[]string{"--dir=/p", "serve"}, true},
		{[]string{"serve", "--dir", "/p"}, true},
		{[]string{"--utc", "serve", "--dir=/p"}, true},
		{[]string{"--dir", "serve", "serve"}, true},
		{[]string{"--dir", "-x", "serve"}, true},
		{[]string{"--dir", "/a", "--dir", "/b", "serve"}, true},
		{[]string{"--utc=false", "serve"}, true},
		{[]string{"--dir", "/p", "serve", "--agent", "coder"}, true},
		{[]string{"serve", "--agent=coder"}, true},
		{[]string{"--agent", "coder", "serve"}, false},
		{[]string{"serve", "--agent"}, false},
		{[]string{"--dir", "serve"}, false},
		{[]string{"serve", "--dir"}, false},
		{[]string{"serve", "extra"}, false},
		{[]string{"serve", "serve"}, false},
		{[]string{"serve", "--help"}, false},
		{[]string{"serve", "-h"}, false},
		{[]string{"help", "serve"}, false},
		{[]string{"serve", "--bogus"}, false},
		{[]string{"serve", "--"}, false},
		{[]string{"--utc=1", "serve"}, false},
		{[]string{"srve"}, false},
		{[]string{"version"}, false},
		{[]string{"__complete", "serve", ""}, false},
		{nil, false},
	} {
		if got := isPlainServe(tc.args); got != tc.plain {
			t.Errorf("isPlainServe(%q) = %v, want %v", tc.args, got, tc.plain)
			continue
		}
		if !tc.plain {
			continue
		}
		whole, wholeErr := recordServe(tc.args, newCmdRoot)
		alone, aloneErr := recordServe(tc.args, func(e *env) *cobra.Command {
			root := newRoot(e)
			root.AddCommand(newCmdServe(e))
			return root
		})
		if whole != alone || fmt.Sprint(wholeErr) != fmt.Sprint(aloneErr) {
			t.Errorf("%q: the whole tree ran %q (%v), serve alone %q (%v)", tc.args, whole, wholeErr, alone, aloneErr)
		}
		if !strings.HasPrefix(whole, "serve ") {
			t.Errorf("%q: the whole tree did not run serve: %q (%v)", tc.args, whole, wholeErr)
		}
	}
}

// recordServe executes args on the tree that build makes, with serve's work
// replaced by a record of what it would have run with.
func recordServe(args []string, build func(*env) *cobra.Command) (string, error) {
	e := newEnv(func(string) string { return "" }, strings.NewReader(""), io.Discard, io.Discard)
	root := build(e)
	var ran string
	for _, c := range root.Commands() {
		if c.Name() == "serve" {
			c.RunE = func(cmd *cobra.Command, args []string) error {
				ran = fmt.Sprintf("serve dir=%q utc=%v args=%q", e.dir, e.utc, args)
				return nil
			}
		}
	}
	root.SetArgs(args)
	err := root.Execute()
	return ran, err
}
