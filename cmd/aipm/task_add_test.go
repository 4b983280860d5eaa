package main

import (
	"io"
	"reflect"
	"strings"
	"testing"

	"aipm/fsstore"
)

// The constructor only parses flags into options: checked here with a
// runF that records them, without a project.
func TestTaskAddFlags(t *testing.T) {
	e := newEnv(func(string) string { return "" }, strings.NewReader(""), io.Discard, io.Discard)
	for _, tc := range []struct {
		args []string
		want fsstore.NewTask
		as   string
		code int // exit code of a refusal, 0 if accepted
	}{
		{args: []string{"Fix it"}, want: fsstore.NewTask{Title: "Fix it", Priority: "normal", Status: fsstore.StatusTodo}},
		{args: []string{"  Fix it  ", "--priority", "urgent", "--assignee", "coder", "--status", "in_progress", "--parent", "01KA", "--as", "ops"},
			want: fsstore.NewTask{Title: "Fix it", Priority: "urgent", Assignee: "coder", Status: fsstore.StatusInProgress, ParentID: "01KA"}, as: "ops"},
		{args: []string{"--description", "d\ne", "Doc"}, want: fsstore.NewTask{Title: "Doc", Description: "d\ne", Priority: "normal", Status: fsstore.StatusTodo}},
		{args: []string{""}, code: exitUsage},
		{args: []string{"a", "b"}, code: exitUsage},
		{args: []string{"x", "--priority", "whenever"}, code: exitUsage},
		{args: []string{"x", "--status", "done"}, code: exitUsage},
		{args: []string{"x", "--status", "blocked"}, code: exitUsage},
		{args: []string{"x", "--status", "in_progress"}, code: exitUsage},
		{args: []string{"x", "--colour"}, code: exitUsage},
	} {
		var got *taskAddOptions
		cmd := newCmdTaskAdd(e, func(o *taskAddOptions) error { got = o; return nil })
		cmd.SetFlagErrorFunc(flagError)
		cmd.SetArgs(tc.args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		err := cmd.Execute()
		if code := exitCode(err, false); code != tc.code {
			t.Errorf("task add %q: exit %d (%v), want %d", tc.args, code, err, tc.code)
			continue
		}
		if tc.code != 0 {
			if got != nil {
				t.Errorf("task add %q: ran despite the refusal", tc.args)
			}
			continue
		}
		if got == nil || !reflect.DeepEqual(got.Task, tc.want) || got.As != tc.as {
			t.Errorf("task add %q: options %+v, want %+v as %q", tc.args, got, tc.want, tc.as)
		}
	}
}
