package launch

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"aipm/fsstore"
	"aipm/internal/clients"
)

// ownDenials splits refused into the calls aipm's own hook denied (an
// interrupt, another's lease: recorded by the hook under the run's launch
// id, fsstore RunTable.RecordDenial) and the client's refusals. A denial
// matches the refusal of its call id or, where either has none, the first
// of its tool's.
func ownDenials(refused []clients.Refusal, denials []fsstore.Denial) (client []clients.Refusal) {
	used := make([]bool, len(denials))
	match := func(r clients.Refusal) bool {
		for i, d := range denials {
			if !used[i] && (r.ID != "" && d.ToolUseID == r.ID || (r.ID == "" || d.ToolUseID == "") && d.Tool == r.Tool) {
				used[i] = true
				return true
			}
		}
		return false
	}
	for _, r := range refused {
		if !match(r) {
			client = append(client, r)
		}
	}
	return client
}

// deniedLine is the run log's one line on the tool calls aipm's own hook
// denied: what they are, and that there is nothing to widen; "" when there
// were none. The human is not told: an interrupt is their own stop, a
// lease the holder's claim.
func deniedLine(denials []fsstore.Denial) string {
	if len(denials) == 0 {
		return ""
	}
	var interrupt, unreadable int
	var leased []string
	for _, d := range denials {
		switch d.Why {
		case fsstore.DeniedInterrupt:
			interrupt++
		case fsstore.DeniedLease:
			leased = append(leased, fmt.Sprintf("%s (leased by %s)", d.Path, d.Holder))
		default:
			unreadable++
		}
	}
	var parts []string
	if interrupt > 0 {
		parts = append(parts, fmt.Sprintf("%d while an interrupt waited (a human blocked, cancelled or stopped its work)", interrupt))
	}
	if len(leased) > 0 {
		parts = append(parts, fmt.Sprintf("%d writing a file another holds: %s", len(leased), strings.Join(leased, ", ")))
	}
	if unreadable > 0 {
		parts = append(parts, fmt.Sprintf("%d because its notifications or the leases could not be read (aipm doctor says why)", unreadable))
	}
	return fmt.Sprintf("aipm: aipm's hook stopped %s, as aipm's rules say (nothing to widen): %s",
		plural(len(denials), "tool call"), strings.Join(parts, "; "))
}

// refusedProblem is the one sentence a human reads of the tool calls
// agent's client refused, with the fix that lets them run.
func refusedProblem(o Options, refused []clients.Refusal) string {
	spec, agent := o.Spec, o.Agent
	counts := map[string]int{}
	var names []string
	for _, r := range refused {
		name := r.Tool
		if r.Said != "" {
			name += ": " + r.Said
		}
		if counts[name] == 0 {
			names = append(names, name)
		}
		counts[name]++
	}
	for i, n := range names {
		if counts[n] > 1 {
			names[i] = fmt.Sprintf("%s ×%d", n, counts[n])
		}
	}
	c, _ := clients.Get(spec.Client)
	by := c.RefusedBy
	return fmt.Sprintf("%s's %s refused %s (%s) by %s under --access %s, so its work may be incomplete even if it reported done: %s",
		agent, spec.Client, plural(len(refused), "tool call"), strings.Join(names, ", "), by, spec.Access, refusedFix(o, refused))
}

// refusedFix is how to let the refused calls run: the next access level
// where that is all it takes, the tools allowed by name where --access
// full would not start (Claude Code as root) or would be more than they
// need.
func refusedFix(o Options, refused []clients.Refusal) string {
	spec, agent := o.Spec, o.Agent
	set := "aipm agent set " + agent
	switch {
	case spec.Access == AccessRead:
		return set + " --access project lets it edit files and run commands inside the project"
	case spec.Access == AccessFull:
		return "check its log for why (with --access full its client asks nothing, so nothing is left to widen)"
	}
	// Under project: the client's own fix (Claude Code: the tools
	// allowed by name; Codex: no sandbox).
	var tools []string
	for _, r := range refused {
		if !slices.Contains(tools, r.Tool) {
			tools = append(tools, r.Tool)
		}
	}
	c, _ := clients.Get(spec.Client)
	return c.Widen(set, spec.run("", "", "", o.Getenv), tools, o.Root)
}

// plural is "1 tool call", "3 tool calls".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// tellOutcome records how the client run ended badly (fsstore RunTable
// RecordOutcome: under aipm watch the run's own outcome, which the
// watcher's reading of the exit keeps), which tells the agent's human once
// per kind of problem, and says it on stderr (the run's log). A run
// without a purpose (aipm launch by hand, no AIPM_PURPOSE) has no outcome
// to record: its humans are told directly.
func tellOutcome(ctx context.Context, o Options, state, problem string) {
	fmt.Fprintln(o.Stderr, "aipm: "+problem)
	store, cfg := o.Store, o.Config
	purpose := o.Getenv(fsstore.EnvPurpose)
	if purpose != fsstore.PurposeTask && purpose != fsstore.PurposeChat {
		for _, h := range cfg.TellWhom(o.Agent) {
			if _, err := store.Send(ctx, cfg, fsstore.OutgoingMessage{From: fsstore.SystemSender, To: h, Content: problem, Kind: fsstore.KindSystem}); err != nil {
				fmt.Fprintf(o.Stderr, "aipm: tell %s: %v\n", h, err)
			}
		}
		return
	}
	out := fsstore.Outcome{RunID: o.Getenv(fsstore.EnvRunID), Agent: o.Agent, Purpose: purpose, State: state, Problem: problem}
	if runs, err := store.Runs().List(); err == nil {
		for _, r := range runs {
			if r.ID == out.RunID && r.ID != "" {
				out.Log, out.StartedAt = store.Rel(r.Log), r.StartedAt
			}
		}
	}
	if _, err := store.Runs().RecordOutcome(ctx, cfg, out); err != nil {
		fmt.Fprintf(o.Stderr, "aipm: %v\n", err)
	}
}
