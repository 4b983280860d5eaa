package taskgraph

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"aipm/fsstore"
	"aipm/internal/table"
)

// maxTitle is the most characters of a title a drawn node shows: a node is
// a box in a picture, and the task's page has the rest.
const maxTitle = 60

// title is how a node shows a title: one line, control characters
// escaped, cut to limit characters (0: whole).
func title(n Node, limit int) string {
	s := table.Visible(table.OneLine(n.Title))
	if limit > 0 {
		s = table.CutText(s, limit)
	}
	return s
}

// status is how a node shows its status: the document's (control
// characters escaped), or that the task does not exist.
func status(n Node) string {
	if n.Missing {
		return "does not exist"
	}
	return table.Visible(table.OneLine(n.Status))
}

// renderText is g for the terminal: one line a task (id, status, title),
// each after what it waits for, and under it, in the title's column, the
// tasks it waits for ("after") and its subtasks, each with its status.
// Tasks that do not exist appear only where they are waited for.
func renderText(g Graph, short func(string) string) string {
	byID := map[string]Node{}
	idW, stW := len("TASK"), len("STATUS")
	for _, n := range g.Nodes {
		byID[n.ID] = n
		if !n.Missing {
			idW, stW = max(idW, utf8.RuneCountInString(short(n.ID))), max(stW, utf8.RuneCountInString(status(n)))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-*s  %-*s  %s\n", idW, "TASK", stW, "STATUS", "TITLE")
	indent := strings.Repeat(" ", idW+stW+4)
	for _, n := range g.Nodes {
		if n.Missing {
			continue
		}
		fmt.Fprintf(&b, "%-*s  %-*s  %s\n", idW, short(n.ID), stW, status(n), title(n, 0))
		var after, subtasks []string
		for _, e := range g.Edges {
			switch {
			case !e.Subtask && e.To == n.ID:
				after = append(after, short(e.From)+" ("+status(byID[e.From])+")")
			case e.Subtask && e.From == n.ID:
				subtasks = append(subtasks, short(e.To)+" ("+status(byID[e.To])+")")
			}
		}
		if len(after) > 0 {
			fmt.Fprintf(&b, "%safter %s\n", indent, strings.Join(after, ", "))
		}
		if len(subtasks) > 0 {
			fmt.Fprintf(&b, "%ssubtasks %s\n", indent, strings.Join(subtasks, ", "))
		}
	}
	return b.String()
}

// styles are the fill and stroke of a node by its status (and of a task
// that does not exist), in both drawn formats; a status that is not one
// (a hand edit) has none.
var styles = map[string][2]string{
	fsstore.StatusBacklog:    {"#f0f0f0", "#999999"},
	fsstore.StatusTodo:       {"#ffffff", "#555555"},
	fsstore.StatusInProgress: {"#fff3cd", "#b58900"},
	fsstore.StatusBlocked:    {"#f8d7da", "#c0392b"},
	fsstore.StatusDone:       {"#d4edda", "#2e7d32"},
	fsstore.StatusCancelled:  {"#e0e0e0", "#777777"},
	missing:                  {"#ffffff", "#c0392b"},
}

// missing is the style (and Mermaid class) of a task that does not exist.
const missing = "missing"

// styleOf is the key of styles a node takes ("" for none).
func styleOf(n Node) string {
	if n.Missing {
		return missing
	}
	if _, ok := styles[n.Status]; ok {
		return n.Status
	}
	return ""
}

// renderMermaid is g as a Mermaid flowchart, for a Markdown page (GitHub
// draws a ```mermaid block): a node a task, labelled with its id, status
// and title (escaped: Mermaid reads nothing of it), its status as its
// class; a solid arrow from a blocker to its dependent, a dotted one from
// a parent to its subtask.
func renderMermaid(g Graph, short func(string) string) string {
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	for _, s := range append(slices.Clone(fsstore.Statuses), missing) {
		st := styles[s]
		fmt.Fprintf(&b, "    classDef %s fill:%s,stroke:%s\n", s, st[0], st[1])
	}
	name := map[string]string{}
	for i, n := range g.Nodes {
		name[n.ID] = fmt.Sprintf("t%d", i+1)
		label := mermaidText(short(n.ID) + " (" + status(n) + ")")
		if t := title(n, maxTitle); t != "" {
			label += "<br/>" + mermaidText(t)
		}
		class := ""
		if s := styleOf(n); s != "" {
			class = ":::" + s
		}
		fmt.Fprintf(&b, "    %s[\"%s\"]%s\n", name[n.ID], label, class)
	}
	for _, e := range g.Edges {
		arrow := "-->"
		if e.Subtask {
			arrow = "-.->|subtask|"
		}
		fmt.Fprintf(&b, "    %s %s %s\n", name[e.From], arrow, name[e.To])
	}
	return b.String()
}

// mermaidText escapes s for a quoted Mermaid label: every character but
// letters, digits, spaces and plain punctuation as Mermaid's entity code
// #N; (so a quote, a bracket, a # or HTML in a title is text).
func mermaidText(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == ' ' || strings.ContainsRune(".,:_-+/()?!'", r) {
			b.WriteRune(r)
		} else {
			fmt.Fprintf(&b, "#%d;", r)
		}
	}
	return b.String()
}

// renderDot is g in Graphviz's dot language: a box a task, labelled with
// its id, status and title and filled by its status; a solid arrow from a
// blocker to its dependent, a dashed one from a parent to its subtask.
func renderDot(g Graph, short func(string) string) string {
	var b strings.Builder
	b.WriteString("digraph tasks {\n")
	b.WriteString("    node [shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\"];\n")
	for _, n := range g.Nodes {
		label := short(n.ID) + " (" + status(n) + ")"
		if t := title(n, maxTitle); t != "" {
			label += "\n" + t
		}
		attrs := "label=" + dotString(label)
		if s := styleOf(n); s != "" {
			attrs += fmt.Sprintf(", fillcolor=%q, color=%q", styles[s][0], styles[s][1])
		}
		if n.Missing {
			attrs += ", style=\"rounded,dashed\""
		}
		fmt.Fprintf(&b, "    %s [%s];\n", dotString(n.ID), attrs)
	}
	for _, e := range g.Edges {
		attrs := ""
		if e.Subtask {
			attrs = " [style=dashed, label=\"subtask\"]"
		}
		fmt.Fprintf(&b, "    %s -> %s%s;\n", dotString(e.From), dotString(e.To), attrs)
	}
	b.WriteString("}\n")
	return b.String()
}

// dotString is s as a quoted dot string: a quote and a backslash escaped
// (a backslash would start one of dot's label escapes), a newline as \n.
func dotString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}
