package main

import (
	"aipm/fsstore/storage"
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
		{&storage.CodeError{Code: "content_too_long"}, false, 2},
		{&storage.CodeError{Code: storage.CodeReasonRequired}, false, 2},
		{fmt.Errorf("send: %w", &storage.CodeError{Code: storage.CodeDiskFull}), false, 1},
		{&storage.CodeError{Code: storage.CodeSentPartly}, false, 1},
		{nil, true, 130},
		{io.EOF, true, 130},
	} {
		if got := exitCode(tc.err, tc.interrupted); got != tc.want {
			t.Errorf("exitCode(%v, %v) = %d, want %d", tc.err, tc.interrupted, got, tc.want)
		}
	}
}
