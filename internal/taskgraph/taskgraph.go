// Package taskgraph draws the dependency graph of a project's tasks (DESIGN
// section 20) for aipm task graph: an edge from each blocker to the task
// that waits for it, and one, drawn apart, from each parent to its
// subtask; as text for the terminal, as a Mermaid flowchart a Markdown page
// draws, or as Graphviz's dot. Pure functions of a list of tasks: the rules
// of waiting and readiness stay in fsstore, and the graph shows only what
// the task documents say.
package taskgraph

import (
	"cmp"
	"fmt"
	"slices"

	"aipm/fsstore"
)

// The formats a graph is rendered in (Render).
const (
	Text    = "text"
	Mermaid = "mermaid"
	Dot     = "dot"
)

// Formats are the formats Render knows, the default first.
var Formats = []string{Text, Mermaid, Dot}

// Graph is the dependency graph of a set of tasks.
type Graph struct {
	// Nodes come each after the tasks it waits for (those of a cycle, which
	// only a hand edit makes, in the order of their ids), else in the order
	// of their ids: the order they were created in.
	Nodes []Node
	// Edges go from what is waited for to what waits: a blocker to its
	// dependent, a parent to its subtask (Subtask), in the order of their
	// dependents, then as the dependent's document lists them.
	Edges []Edge
}

// Node is one task of a graph.
type Node struct {
	ID, Title, Status string
	// Missing says a task's blockedBy names ID but no task of the
	// project has it (a hand edit, or a task removed).
	Missing bool
}

// Edge is one dependency: To waits for From as a blocker, or From is the
// parent of the subtask To.
type Edge struct {
	From, To string
	Subtask  bool
}

// Build is the graph of tasks' dependencies: with all, every dependency of
// them; without, those of the open tasks (the blockers they wait for, the
// subtasks of open parents). A task is in the graph only through a
// dependency; a subtask whose parent is not among tasks has none.
func Build(tasks []fsstore.Task, all bool) Graph {
	byID := make(map[string]fsstore.Task, len(tasks))
	for _, t := range tasks {
		byID[t.ID] = t
	}
	sorted := slices.SortedFunc(slices.Values(tasks), func(a, b fsstore.Task) int { return cmp.Compare(a.ID, b.ID) })
	var g Graph
	seen := map[Edge]bool{}
	add := func(e Edge, waiter fsstore.Task) {
		if !seen[e] && (all || fsstore.StatusOpen(waiter.Status)) {
			seen[e] = true
			g.Edges = append(g.Edges, e)
		}
	}
	for _, t := range sorted {
		for _, b := range t.BlockedBy {
			add(Edge{From: b, To: t.ID}, t)
		}
		if p, ok := byID[t.ParentID]; ok && t.ParentID != "" {
			add(Edge{From: p.ID, To: t.ID, Subtask: true}, p) // the parent waits for it
		}
	}
	g.Nodes = nodes(g.Edges, byID)
	return g
}

// nodes are the ends of edges, each after what it waits for (order).
func nodes(edges []Edge, byID map[string]fsstore.Task) []Node {
	in := map[string]bool{}
	for _, e := range edges {
		in[e.From], in[e.To] = true, true
	}
	var out []Node
	for _, id := range order(edges, in) {
		t, ok := byID[id]
		out = append(out, Node{ID: id, Title: t.Title, Status: t.Status, Missing: !ok})
	}
	return out
}

// order sorts the ids of in so that each comes after what it waits for: a
// blocker before its dependent, a subtask before its parent. Among those
// free to come next, the oldest id first; the tasks of a cycle, which
// never come free, at the end in the order of their ids.
func order(edges []Edge, in map[string]bool) []string {
	waitsFor := map[string]int{} // what each id still waits for
	waiters := map[string][]string{}
	for _, e := range edges {
		waited, waiter := e.From, e.To
		if e.Subtask {
			waited, waiter = e.To, e.From
		}
		waitsFor[waiter]++
		waiters[waited] = append(waiters[waited], waiter)
	}
	var out, free []string
	for id := range in {
		if waitsFor[id] == 0 {
			free = append(free, id)
		}
	}
	done := map[string]bool{}
	for len(free) > 0 {
		slices.Sort(free)
		id := free[0]
		free = free[1:]
		out, done[id] = append(out, id), true
		for _, w := range waiters[id] {
			if waitsFor[w]--; waitsFor[w] == 0 {
				free = append(free, w)
			}
		}
	}
	var cycle []string
	for id := range in {
		if !done[id] {
			cycle = append(cycle, id)
		}
	}
	slices.Sort(cycle)
	return append(out, cycle...)
}

// Render is g in format (one of Formats); short shows a task id (a
// table.Shortener; nil shows it whole).
func Render(g Graph, format string, short func(string) string) (string, error) {
	if short == nil {
		short = func(id string) string { return id }
	}
	switch format {
	case Text:
		return renderText(g, short), nil
	case Mermaid:
		return renderMermaid(g, short), nil
	case Dot:
		return renderDot(g, short), nil
	}
	return "", fmt.Errorf("the graph format %q is not one: use one of text, mermaid, dot", format)
}
