package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"aipm/fsstore"
)

// The one exit-code rule of the CLI (README "Exit codes").
const (
	exitOK          = 0   // success
	exitFailed      = 1   // the command was right, the operation failed or was refused
	exitUsage       = 2   // the command line is wrong: flag, value, id, agent, no project
	exitInterrupted = 130 // Ctrl-C (or SIGTERM) ended the command
)

// exitError carries the exit code of an error; a nil err prints nothing.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// usageError is a mistake on the command line: exit 2.
func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// asUsage marks err as a usage mistake (exit 2), keeping its text.
func asUsage(err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: exitUsage, err: err}
}

// failed is an operation that failed without a message of its own to add:
// its lines were already printed (doctor's problems).
func failed(format string, args ...any) error {
	return &exitError{code: exitFailed, err: fmt.Errorf(format, args...)}
}

// exitCode is the rule: 130 when a signal ended the command, else the code
// an error carries (usageError, asUsage, failed), else 2 for a store error
// that refuses the request itself (a CodeError that is a Refusal,
// ErrInvalid, ErrAmbiguous), else 1. A store error of another kind
// (ErrNotFound, a transition refused by the task's state, a full disk, a
// send delivered only in part) is 1.
func exitCode(err error, interrupted bool) int {
	switch {
	case interrupted:
		return exitInterrupted
	case err == nil:
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	var ce *fsstore.CodeError
	if errors.As(err, &ce) && ce.Refusal() || errors.Is(err, fsstore.ErrInvalid) || errors.Is(err, fsstore.ErrAmbiguous) {
		return exitUsage
	}
	return exitFailed
}

// flagError turns pflag's parse errors into usage errors that say where
// the flags are described.
func flagError(cmd *cobra.Command, err error) error {
	return usageError("%v: see %s --help", err, cmd.CommandPath())
}
