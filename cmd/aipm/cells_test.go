package main

import (
	"testing"
)

// TestCompleteID: a start of the whole id or of its part after "tsk_", in
// either case, keeping what was typed.
func TestCompleteID(t *testing.T) {
	const id = "tsk_01M8A61Z7A2HJ2E0DXX0S21N5S"
	for _, tc := range []struct {
		typed, want string
		ok          bool
	}{
		{"", id, true},
		{"t", id, true},
		{"TSK_01M8", "TSK_01M8A61Z7A2HJ2E0DXX0S21N5S", true},
		{"01M8A", "01M8A61Z7A2HJ2E0DXX0S21N5S", true},
		{"01m8a", "01m8a61Z7A2HJ2E0DXX0S21N5S", true},
		{"01M9", "", false},
		{"tsk_01M9", "", false},
		{id + "X", "", false},
		{"01M8A61Z7A2HJ2E0DXX0S21N5S", "01M8A61Z7A2HJ2E0DXX0S21N5S", true},
	} {
		got, ok := completeID(id, tc.typed)
		if got != tc.want || ok != tc.ok {
			t.Errorf("completeID(%q) = %q, %v; want %q, %v", tc.typed, got, ok, tc.want, tc.ok)
		}
	}
}
