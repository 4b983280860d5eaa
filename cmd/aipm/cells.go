package main

import (
	"io"
	"strings"
	"time"

	"aipm/internal/table"
)

// How the commands' tables show ids, times and long text: the rules are
// internal/table's; --json and --quiet always print the whole values.

// age shows t as table.Age does, dates in local time or UTC with --utc.
func (e *env) age(t time.Time) string {
	loc := time.Local
	if e.utc {
		loc = time.UTC
	}
	return table.Age(t, time.Now(), loc)
}

// quietJSON refuses --quiet with --json: each says what to print.
func quietJSON(cmd string, quiet, json bool) error {
	if quiet && json {
		return usageError("%s: --quiet prints ids only and --json whole records: give one of them", cmd)
	}
	return nil
}

// printIDs is --quiet: the whole id of each of items, one a line, for
// scripts.
func printIDs[T any](w io.Writer, items []T, id func(T) string) error {
	var b strings.Builder
	for _, item := range items {
		b.WriteString(id(item))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}
