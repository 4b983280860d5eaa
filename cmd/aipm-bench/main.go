// Command aipm-bench measures aipm's performance targets (docs/operations.md,
// "Benchmarks"), each beside its raw floor measured in the same run:
//
//	go run ./cmd/aipm-bench [--quick] [--only P4,...] [--json] [--aipm PATH] [--row-timeout D]
//
// It is a command of its own, not one of aipm's, so that the aipm users run
// links neither the headless-Chromium driver of P9 (chromedp) nor the
// loopback sshd of P10 (internal/sshtest). It measures the aipm binary named
// by --aipm, else the one beside it, else one it builds from the module's
// ./cmd/aipm (when run inside aipm's module), else aipm on PATH (aipmBinary).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"aipm/internal/bench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	interrupted := ctx.Err() != nil
	stop()
	os.Exit(report(os.Stderr, err, interrupted))
}

// usage marks a mistake on the command line: exit 2.
type usage struct{ error }

func (u usage) Unwrap() error { return u.error }

// report prints err as "aipm-bench: " and one sentence and returns the exit
// code, as aipm's: 0 success, 1 failed, 2 a usage mistake, 130 interrupted.
func report(stderr io.Writer, err error, interrupted bool) int {
	switch {
	case interrupted:
		return 130
	case err == nil:
		return 0
	}
	fmt.Fprintln(stderr, "aipm-bench:", err)
	if errors.As(err, new(usage)) {
		return 2
	}
	return 1
}

type options struct {
	quick      bool
	json       bool
	only       []string
	aipm       string
	rowTimeout time.Duration
}

// run builds the command and executes args.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o := &options{}
	root := &cobra.Command{
		Use:   "aipm-bench [--quick] [--only P4,...] [--aipm PATH] [--row-timeout D]",
		Short: "Measure aipm's performance targets against their raw floors",
		Long: `Measure aipm's performance targets (docs/operations.md lists them), each
beside its raw floor measured in the same run, in throw-away projects with
fsync on: real aipm serve processes driven by the MCP SDK's client over stdio.
Takes minutes; --quick is a smoke run, --only measures the targets named (P1 to
P10 or P12, or one row: P3c, P3s, P6a to P6h, P8a, P8b, P9a to P9c, P10s1,
P10s2, P10h1, P10h2, P12a, P12r, P12w) and no others. P9 drives aipm web's page
in a headless Chromium (chromium on PATH; without it, P9a and P9b say so and
are not met). P10 runs P1 and P2 over ssh, through a loopback sshd it starts
with keys it generates (sshd and ssh-keygen installed; without them the ssh
rows say so and are not met), and over aipm serve --http, each beside the local
one.

Every target has a deadline (minutes: 10, or 20 for those of a million
lines of history; 2 with --quick; --row-timeout sets them all). A target
that passes it, or fails, gives its rows not met with the reason ("did not
finish in 10m0s: waiting for ..."), its processes are killed, and the run
goes on; a server the bench started that exits makes what waits on it fail
at once. The table is printed, then aipm-bench exits 1 naming those rows.
With --json each row also carries its numbers (aipm_values, floor_values),
its target as checks ({"of", "value", "op", "limit", "unit", "met"}; met
when all hold) and error (why it was not measured, else "").

The aipm measured is --aipm PATH; else the aipm beside this binary (both
installed by go install ./cmd/...); else, run inside aipm's module (go run
./cmd/aipm-bench), ./cmd/aipm and ./cmd/aipm-hook built now into a temporary
directory; else aipm on PATH. Its progress on stderr says which.`,
		Example: "  go run ./cmd/aipm-bench --quick\n  go run ./cmd/aipm-bench --only P4\n  go run ./cmd/aipm-bench --only P6c,P6d\n  go run ./cmd/aipm-bench --quick --only P9\n  go run ./cmd/aipm-bench --json\n  go run ./cmd/aipm-bench --aipm ~/go/bin/aipm --only P4,P8\n  go run ./cmd/aipm-bench --row-timeout 5m",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usage{fmt.Errorf("aipm-bench takes no arguments, not %q: see aipm-bench --help", args[0])}
			}
			return nil
		},
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return benchRun(cmd.Context(), o, stdout, stderr)
		},
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usage{fmt.Errorf("%w: see aipm-bench --help", err)}
	})
	root.Flags().BoolVar(&o.quick, "quick", false, "fewer iterations and a 100,000-line history instead of 1,000,000 (for a smoke run)")
	root.Flags().StringSliceVar(&o.only, "only", nil, "measure only these targets, e.g. P4 or P1,P4 (default: all)")
	root.Flags().BoolVar(&o.json, "json", false, "print the rows as a JSON array")
	root.Flags().StringVar(&o.aipm, "aipm", "", "the aipm binary to measure (default: beside aipm-bench, else built from the module, else on PATH)")
	root.Flags().DurationVar(&o.rowTimeout, "row-timeout", 0, "every target's deadline, e.g. 90s (default: each target's own, 2m with --quick)")
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(floorCmds(stdout)...)
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}

// benchRun finds the aipm to measure, measures (internal/bench) and prints
// the table, or the rows as JSON.
func benchRun(ctx context.Context, o *options, stdout, stderr io.Writer) error {
	if err := bench.Check(o.only); err != nil {
		return usage{err}
	}
	if o.rowTimeout < 0 {
		return usage{fmt.Errorf("--row-timeout %s: give a positive duration, e.g. 90s or 5m", o.rowTimeout)}
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find aipm-bench's own binary: %w", err)
	}
	tmp, err := os.MkdirTemp("", "aipm-bench-bin-*")
	if err != nil {
		return fmt.Errorf("make a directory for the aipm to build: %w", err)
	}
	defer os.RemoveAll(tmp)
	aipm, from, err := aipmBinary(ctx, o.aipm, self, tmp, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "bench: measuring %s (%s)\n", aipm, from)
	rows, err := bench.Run(ctx, bench.Options{Quick: o.quick, Only: o.only, Aipm: aipm, Self: self, Log: stderr, RowTimeout: o.rowTimeout})
	if errors.Is(err, bench.ErrUnknownTarget) {
		return usage{err}
	}
	if err != nil && !errors.Is(err, bench.ErrNotMeasured) {
		return err
	}
	write := bench.WriteTable
	if o.json {
		write = bench.WriteJSON
	}
	if werr := write(stdout, rows); werr != nil {
		return werr
	}
	return err // the rows of targets not measured, after the table that shows why
}

// aipmBinary is the aipm to measure, and where it comes from: flag (the
// --aipm value) if set; else aipm beside self; else, when the working
// directory is in aipm's module and go is on PATH, aipm and aipm-hook (for
// P8a, found beside aipm) built into dir from the module (saying so on
// log); else aipm on PATH. The one it picks must answer `aipm version`.
func aipmBinary(ctx context.Context, flag, self, dir string, log io.Writer) (path, from string, err error) {
	if flag != "" {
		path, err := filepath.Abs(flag)
		if err != nil {
			return "", "", usage{fmt.Errorf("--aipm %q: %w", flag, err)}
		}
		if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
			return "", "", usage{fmt.Errorf("--aipm %q: no such file: give the path of an aipm binary (go build -o aipm ./cmd/aipm)", flag)}
		}
		if err := isAipm(ctx, path); err != nil {
			return "", "", usage{fmt.Errorf("--aipm %q: %w: give the path of an aipm binary (go build -o aipm ./cmd/aipm)", flag, err)}
		}
		return path, "--aipm", nil
	}
	beside := filepath.Join(filepath.Dir(self), "aipm")
	if fi, err := os.Stat(beside); err == nil && fi.Mode().IsRegular() {
		return beside, "beside aipm-bench", isAipm(ctx, beside)
	}
	if inModule(ctx) {
		fmt.Fprintln(log, "bench: building ./cmd/aipm and ./cmd/aipm-hook (CGO_ENABLED=0 go build, as README installs them)")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+string(filepath.Separator), "aipm/cmd/aipm", "aipm/cmd/aipm-hook")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // as README's install builds them
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("go build ./cmd/aipm ./cmd/aipm-hook: %w\n%s", err, out)
		}
		path := filepath.Join(dir, "aipm")
		return path, "built from ./cmd/aipm", isAipm(ctx, path)
	}
	if path, err := exec.LookPath("aipm"); err == nil {
		return path, "on PATH", isAipm(ctx, path)
	}
	return "", "", usage{errors.New("no aipm to measure: none beside aipm-bench, not run inside aipm's module (to build ./cmd/aipm), none on PATH; give one with --aipm PATH")}
}

// inModule says whether the working directory is in aipm's module (or a
// workspace that holds it), with a go command to build it.
func inModule(ctx context.Context) bool {
	out, err := exec.CommandContext(ctx, "go", "list", "-m").Output()
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.TrimSpace(line) == "aipm" {
			return true
		}
	}
	return false
}

// isAipm checks that path runs as aipm: `aipm version` prints "aipm ...".
func isAipm(ctx context.Context, path string) error {
	out, err := exec.CommandContext(ctx, path, "version").Output()
	if err != nil {
		return fmt.Errorf("%s version: %w", path, err)
	}
	if !strings.HasPrefix(string(out), "aipm ") {
		return fmt.Errorf("%s version printed %q, not aipm's version", path, strings.TrimSpace(string(out)))
	}
	return nil
}

// floorCmds are the floors' helper processes (hidden), which the bench
// starts from its own binary.
func floorCmds(stdout io.Writer) []*cobra.Command {
	hidden := func(use string, fn func(context.Context, []string, io.Writer) error) *cobra.Command {
		return &cobra.Command{Use: use, Hidden: true, RunE: func(cmd *cobra.Command, args []string) error {
			return fn(cmd.Context(), args, stdout)
		}}
	}
	return []*cobra.Command{
		hidden("bench-floor-reader FILE", bench.FloorReader),
		hidden("bench-floor-writer IN OUT N", bench.FloorWriter),
		hidden("bench-floor-server IN OUT", bench.FloorServer),
		hidden("bench-floor-relay-append FILE", bench.FloorRelayAppend),
		hidden("bench-floor-relay-echo FILE", bench.FloorRelayEcho),
	}
}
