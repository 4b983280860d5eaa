package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"aipm/fsstore"
	"aipm/internal/table"
)

type compactOptions struct {
	e      *env
	DryRun bool
	JSON   bool
}

func newCmdCompact(e *env, runF func(*compactOptions) error) *cobra.Command {
	o := &compactOptions{e: e}
	c := &cobra.Command{
		Use:   "compact [--dry-run]",
		Short: "Shorten the agents' chat, notification and receipt logs to the configured retention",
		Long: `Shorten every agent's chat.jsonl, notifications.jsonl and receipts.jsonl to
the newest lines that [retention] in config.toml keeps (chat_lines,
notification_lines, receipt_lines), and print, for each log shortened:
PATH  dropped N lines (SIZE), kept SIZE.

Nothing a reader still needs is dropped: no line at or past an agent's read
cursor (nor in a batch handed to a session and not acknowledged), not the
line the cursor last consumed, and no unread notification that has not
expired ([notifications.ttl]). A log held longer than its retention for
that reason says "unread lines kept". Dropped lines are gone; the chat
horizon is kept in agents/AGENT/compacted.json so that aipm doctor does not
restore them. Agents may keep working meanwhile: every reader keeps its
place.

aipm watch compacts on its own every [retention] every (default 1h). One
compaction runs at a time: this command waits for one that runs.

--dry-run prints what would be dropped and changes nothing; --json prints
{"files": [...]} with the byte and line counts.`,
		Example: "  aipm compact --dry-run\n  aipm compact\n  aipm compact --json",
		Args:    argsNone,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(o)
			}
			return compactRun(cmd, o)
		},
	}
	c.Flags().BoolVarP(&o.DryRun, "dry-run", "n", false, "print what would be dropped and change nothing")
	c.Flags().BoolVar(&o.JSON, "json", false, "print the result as JSON")
	return c
}

func compactRun(cmd *cobra.Command, o *compactOptions) error {
	store, cfg, err := o.e.open()
	if err != nil {
		return err
	}
	res, err := store.Compact(cmd.Context(), cfg, fsstore.CompactOptions{DryRun: o.DryRun, Wait: true})
	if o.JSON {
		if res.Files == nil {
			res.Files = []fsstore.CompactedFile{}
		}
		if werr := writeJSON(o.e.stdout, res); werr != nil {
			return werr
		}
		return err
	}
	verb := "dropped"
	if o.DryRun {
		verb = "would drop"
	}
	for _, f := range res.Files {
		line := fmt.Sprintf("%s  %s %s (%s), kept %s", f.Path, verb, plural(f.DroppedLines, "line"), table.ByteSize(f.DroppedBytes), table.ByteSize(f.KeptBytes))
		if f.Unread {
			line += ": unread lines kept"
		}
		fmt.Fprintln(o.e.stdout, line)
	}
	if len(res.Files) == 0 && err == nil {
		fmt.Fprintln(o.e.stdout, "nothing to compact")
	}
	return err
}
