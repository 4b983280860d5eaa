package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"aipm/internal/bench"
)

type benchOptions struct {
	e     *env
	Quick bool
	JSON  bool
	Only  []string
}

func newCmdBench(e *env) *cobra.Command {
	o := &benchOptions{e: e}
	c := &cobra.Command{
		Use:   "bench [--quick] [--only P4,...]",
		Short: "Measure the performance targets against their raw floors",
		Long: `Measure aipm's performance targets (docs/operations.md lists them), each
beside its raw floor measured in the same run, in throw-away projects with
fsync on: real aipm serve processes driven by the MCP SDK's client over stdio.
Takes minutes; --quick is a smoke run, --only measures the targets named (P1 to
P10, or one row: P3c, P3s, P6a to P6h, P8a, P8b, P9a to P9c, P10s1, P10s2,
P10h1, P10h2) and no others. P9 drives aipm web's page in a headless Chromium
(chromium on PATH; without it, P9a and P9b say so and are not met). P10 runs P1
and P2 over ssh, through a loopback sshd it starts with keys it generates
(sshd and ssh-keygen installed; without them the ssh rows say so and are not
met), and over aipm serve --http, each beside the local one.`,
		Example: "  aipm bench --quick\n  aipm bench --only P4\n  aipm bench --only P6c,P6d\n  aipm bench --quick --only P9\n  aipm bench --json",
		Args:    argsNone,
		RunE: func(cmd *cobra.Command, args []string) error {
			return benchRun(cmd.Context(), o)
		},
	}
	c.Flags().BoolVar(&o.Quick, "quick", false, "fewer iterations and a 100,000-line history instead of 1,000,000 (for a smoke run)")
	c.Flags().StringSliceVar(&o.Only, "only", nil, "measure only these targets, e.g. P4 or P1,P4 (default: all)")
	c.Flags().BoolVar(&o.JSON, "json", false, "print the rows as a JSON array")
	return c
}

// benchRun measures (internal/bench) and prints the table, or the rows as
// JSON.
func benchRun(ctx context.Context, o *benchOptions) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("bench: find aipm binary: %w", err)
	}
	rows, err := bench.Run(ctx, bench.Options{Quick: o.Quick, Only: o.Only, Self: self, Log: o.e.stderr})
	if errors.Is(err, bench.ErrUnknownTarget) {
		return asUsage(err)
	}
	if err != nil {
		return err
	}
	if o.JSON {
		out := make([]map[string]any, 0, len(rows))
		for _, r := range rows {
			out = append(out, r.JSON())
		}
		return writeJSON(o.e.stdout, out)
	}
	t := &table{header: bench.Header}
	for _, r := range rows {
		t.add(r.Cells()...)
	}
	return t.print(o.e.stdout, o.e.colour, o.e.width)
}

// newBenchFloorCmds are the floors' helper processes (hidden).
func newBenchFloorCmds(e *env) []*cobra.Command {
	hidden := func(use string, fn func(context.Context, []string, io.Writer) error) *cobra.Command {
		return &cobra.Command{Use: use, Hidden: true, RunE: func(cmd *cobra.Command, args []string) error {
			return fn(cmd.Context(), args, e.stdout)
		}}
	}
	return []*cobra.Command{
		hidden("bench-floor-reader FILE", bench.FloorReader),
		hidden("bench-floor-writer IN OUT N", bench.FloorWriter),
		hidden("bench-floor-server IN OUT", bench.FloorServer),
	}
}
