package main

import (
	"aipm/fsstore"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
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

// flagError turns pflag's parse errors into one sentence that names the
// flag and what it takes, and where the flags are described.
func flagError(cmd *cobra.Command, err error) error {
	help := cmd.CommandPath() + " --help"
	var (
		invalid  *pflag.InvalidValueError
		required *pflag.ValueRequiredError
		unknown  *pflag.NotExistError
	)
	switch {
	case errors.As(err, &invalid):
		f := invalid.GetFlag()
		return usageError("--%s takes %s, not %q: see %s", f.Name, flagValueKind(f), invalid.GetValue(), help)
	case errors.As(err, &required):
		f := required.GetFlag()
		return usageError("--%s needs a value, %s: see %s", f.Name, flagValueKind(f), help)
	case errors.As(err, &unknown):
		name := "--" + unknown.GetSpecifiedName()
		if short := unknown.GetSpecifiedShortnames(); short != "" {
			name = "-" + unknown.GetSpecifiedName()[:1]
		}
		if near := nearestFlag(cmd, unknown.GetSpecifiedName()); near != "" && unknown.GetSpecifiedShortnames() == "" {
			return usageError("%s has no flag %s: did you mean --%s?", cmd.CommandPath(), name, near)
		}
		return usageError("%s has no flag %s: see %s", cmd.CommandPath(), name, help)
	}
	return usageError("%v: see %s", err, help)
}

// nearestFlag is the visible flag of cmd (its own and, merged in before
// parsing, those it inherits) nearest to name, if one is near enough to be
// what was meant (fsstore.Nearest).
func nearestFlag(cmd *cobra.Command, name string) string {
	var known []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			known = append(known, f.Name)
		}
	})
	return fsstore.Nearest(name, known)
}

// flagValueKind says in words what a flag's value must be.
func flagValueKind(f *pflag.Flag) string {
	switch f.Value.Type() {
	case "int", "int64", "int32", "uint", "uint64", "uint32":
		return "a whole number"
	case "bool":
		return "true or false"
	case "duration":
		return "a duration such as 30s or 5m"
	case "float64", "float32":
		return "a number"
	case "stringSlice", "stringArray":
		return "a comma-separated list"
	}
	return "a value"
}

// cliSentences are the CLI's words for the store refusals whose message
// is written for a model (it names tool arguments or other tools). The
// commands check what they can first, with the value in their message;
// these are the rest.
var cliSentences = map[string]string{
	fsstore.CodeAgentNotFound:           "that agent is not one of this project's: see aipm agent list",
	fsstore.CodeTargetAgentNotInProject: "that agent is no longer in this project's config.toml: see aipm agent list",
	fsstore.CodeContentEmpty:            "the message is empty: give its text, or - to read it from stdin",
}

// cliMessage is the one line the CLI prints for err: its text, with a
// store refusal written for a model put in the CLI's words (a lease
// conflict's holder is asked with aipm send).
func cliMessage(err error) string {
	msg := err.Error()
	var lc *fsstore.LeaseConflictError
	if errors.As(err, &lc) {
		msg = strings.Replace(msg, fsstore.LeaseAskTools, "(aipm send --to "+lc.Lease.Holder+")", 1)
	}
	var ce *fsstore.CodeError
	if errors.As(err, &ce) {
		if s, ok := cliSentences[ce.Code]; ok && ce.Msg != "" {
			msg = strings.Replace(msg, ce.Msg, s, 1)
		}
	}
	return msg
}

// report prints err on stderr as "aipm: " and one sentence (nothing for
// an interrupted command, or an error with no message) and returns the
// exit code.
func report(stderr io.Writer, err error, interrupted bool) int {
	code := exitCode(err, interrupted)
	if err != nil && code != exitInterrupted {
		if msg := cliMessage(err); msg != "" {
			fmt.Fprintln(stderr, "aipm:", msg)
		}
	}
	return code
}
