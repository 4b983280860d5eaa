package main

import (
	"aipm/fsstore"
	"fmt"
	"io"
	"testing"
)

func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		err         error
		interrupted bool
		want        int
	}{
		{nil, false, 0},
		{io.EOF, false, 1},
		{usageError("x"), false, 2},
		{failed("x"), false, 1},
		{&fsstore.CodeError{Code: "content_too_long"}, false, 2},
		{&fsstore.CodeError{Code: fsstore.CodeReasonRequired}, false, 2},
		{fmt.Errorf("send: %w", &fsstore.CodeError{Code: fsstore.CodeDiskFull}), false, 1},
		{&fsstore.CodeError{Code: fsstore.CodeSentPartly}, false, 1},
		{nil, true, 130},
		{io.EOF, true, 130},
	} {
		if got := exitCode(tc.err, tc.interrupted); got != tc.want {
			t.Errorf("exitCode(%v, %v) = %d, want %d", tc.err, tc.interrupted, got, tc.want)
		}
	}
}
