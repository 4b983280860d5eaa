package taskgraph

import (
	"reflect"
	"strings"
	"testing"

	"aipm/fsstore"
)

// task is a task document as the graph reads it.
func task(id, status, title, parent string, blockedBy ...string) fsstore.Task {
	return fsstore.Task{ID: id, Status: status, Title: title, ParentID: parent, BlockedBy: blockedBy}
}

// TestBuild: which dependencies a graph holds (open tasks' by default,
// every one with all), and the order of its nodes (each after what it
// waits for; a cycle's at the end).
func TestBuild(t *testing.T) {
	chain := []fsstore.Task{
		task("t1", fsstore.StatusDone, "A", ""),
		task("t2", fsstore.StatusDone, "B", "", "t1"),
		task("t3", fsstore.StatusTodo, "C", "", "t2"),
		task("t4", fsstore.StatusTodo, "lonely", ""),
	}
	for _, tc := range []struct {
		name  string
		tasks []fsstore.Task
		all   bool
		nodes []string
		edges []Edge
	}{
		{name: "no dependencies", tasks: []fsstore.Task{task("t1", fsstore.StatusTodo, "A", "")}},
		{name: "open tasks and what they wait for", tasks: chain,
			nodes: []string{"t2", "t3"}, edges: []Edge{{From: "t2", To: "t3"}}},
		{name: "all", tasks: chain, all: true,
			nodes: []string{"t1", "t2", "t3"}, edges: []Edge{{From: "t1", To: "t2"}, {From: "t2", To: "t3"}}},
		{name: "diamond, listed newest first", tasks: []fsstore.Task{
			task("t4", fsstore.StatusTodo, "D", "", "t3", "t2"),
			task("t3", fsstore.StatusTodo, "C", "", "t1"),
			task("t2", fsstore.StatusTodo, "B", "", "t1"),
			task("t1", fsstore.StatusInProgress, "A", ""),
		}, nodes: []string{"t1", "t2", "t3", "t4"},
			edges: []Edge{{From: "t1", To: "t2"}, {From: "t1", To: "t3"}, {From: "t3", To: "t4"}, {From: "t2", To: "t4"}}},
		{name: "subtasks come before their parent", tasks: []fsstore.Task{
			task("t1", fsstore.StatusInProgress, "P", ""),
			task("t2", fsstore.StatusTodo, "S1", "t1"),
			task("t3", fsstore.StatusDone, "S2", "t1"),
			task("t4", fsstore.StatusTodo, "orphan", "t9"),
		}, nodes: []string{"t2", "t3", "t1"},
			edges: []Edge{{From: "t1", To: "t2", Subtask: true}, {From: "t1", To: "t3", Subtask: true}}},
		{name: "a done parent's subtasks only with all", tasks: []fsstore.Task{
			task("t1", fsstore.StatusDone, "P", ""),
			task("t2", fsstore.StatusDone, "S", "t1"),
		}},
		{name: "a blocker that does not exist, named twice", tasks: []fsstore.Task{
			task("t2", fsstore.StatusTodo, "B", "", "t0", "t0"),
		}, nodes: []string{"t0", "t2"}, edges: []Edge{{From: "t0", To: "t2"}}},
		{name: "a cycle made by hand comes last", tasks: []fsstore.Task{
			task("t1", fsstore.StatusTodo, "A", "", "t2"),
			task("t2", fsstore.StatusTodo, "B", "", "t1"),
			task("t3", fsstore.StatusTodo, "C", "", "t1", "t4"),
			task("t4", fsstore.StatusTodo, "D", ""),
		}, nodes: []string{"t4", "t1", "t2", "t3"},
			edges: []Edge{{From: "t2", To: "t1"}, {From: "t1", To: "t2"}, {From: "t1", To: "t3"}, {From: "t4", To: "t3"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := Build(tc.tasks, tc.all)
			var nodes []string
			for _, n := range g.Nodes {
				nodes = append(nodes, n.ID)
			}
			if !reflect.DeepEqual(nodes, tc.nodes) || !reflect.DeepEqual(g.Edges, tc.edges) {
				t.Errorf("nodes %q edges %+v, want %q %+v", nodes, g.Edges, tc.nodes, tc.edges)
			}
		})
	}
}

// plan is a small plan with everything a rendering must carry: a chain, a
// parent and its subtask, a blocker that does not exist, and a title with
// quotes, brackets, a newline, HTML and a control character.
var plan = []fsstore.Task{
	task("tsk_1", fsstore.StatusDone, "Design", ""),
	task("tsk_2", fsstore.StatusInProgress, "Say \"hi\" [now]\n<b>#1</b>\x1b", "", "tsk_1", "tsk_0"),
	task("tsk_3", fsstore.StatusTodo, `back\slash`, "tsk_2"),
}

// TestRender: each format, whole, for the plan (ids shortened as a table
// shows them).
func TestRender(t *testing.T) {
	short := func(id string) string { return strings.TrimPrefix(id, "tsk_") }
	for _, tc := range []struct {
		format string
		want   string
	}{
		{Text, `TASK  STATUS       TITLE
1     done         Design
3     todo         back\slash
2     in_progress  Say "hi" [now] <b>#1</b>\x1b
                   after 1 (done), 0 (does not exist)
                   subtasks 3 (todo)
`},
		{Mermaid, `flowchart TD
    classDef backlog fill:#f0f0f0,stroke:#999999
    classDef todo fill:#ffffff,stroke:#555555
    classDef in_progress fill:#fff3cd,stroke:#b58900
    classDef blocked fill:#f8d7da,stroke:#c0392b
    classDef done fill:#d4edda,stroke:#2e7d32
    classDef cancelled fill:#e0e0e0,stroke:#777777
    classDef missing fill:#ffffff,stroke:#c0392b
    t1["0 (does not exist)"]:::missing
    t2["1 (done)<br/>Design"]:::done
    t3["3 (todo)<br/>back#92;slash"]:::todo
    t4["2 (in_progress)<br/>Say #34;hi#34; #91;now#93; #60;b#62;#35;1#60;/b#62;#92;x1b"]:::in_progress
    t2 --> t4
    t1 --> t4
    t4 -.->|subtask| t3
`},
		{Dot, `digraph tasks {
    node [shape=box, style="rounded,filled", fillcolor="#ffffff"];
    "tsk_0" [label="0 (does not exist)", fillcolor="#ffffff", color="#c0392b", style="rounded,dashed"];
    "tsk_1" [label="1 (done)\nDesign", fillcolor="#d4edda", color="#2e7d32"];
    "tsk_3" [label="3 (todo)\nback\\slash", fillcolor="#ffffff", color="#555555"];
    "tsk_2" [label="2 (in_progress)\nSay \"hi\" [now] <b>#1</b>\\x1b", fillcolor="#fff3cd", color="#b58900"];
    "tsk_1" -> "tsk_2";
    "tsk_0" -> "tsk_2";
    "tsk_2" -> "tsk_3" [style=dashed, label="subtask"];
}
`},
	} {
		t.Run(tc.format, func(t *testing.T) {
			got, err := Render(Build(plan, false), tc.format, short)
			if err != nil || got != tc.want {
				t.Errorf("Render %s = (%v)\n%s\nwant\n%s", tc.format, err, got, tc.want)
			}
		})
	}
}

// TestRenderEdges: an unknown format is refused naming the formats, no
// short function shows ids whole, and a long title is cut in a drawn node
// but not in the terminal's list.
func TestRenderEdges(t *testing.T) {
	g := Build([]fsstore.Task{task("tsk_1", fsstore.StatusTodo, strings.Repeat("x", 80), ""), task("tsk_2", "weird", "B", "", "tsk_1")}, false)
	for _, tc := range []struct {
		format, want, not string
	}{
		{Text, "tsk_1  todo    " + strings.Repeat("x", 80) + "\n", "…"},
		{Mermaid, `t2["tsk_2 (weird)<br/>B"]` + "\n", ":::weird"},
		{Dot, strings.Repeat("x", maxTitle-1) + "…\"", strings.Repeat("x", maxTitle)},
	} {
		got, err := Render(g, tc.format, nil)
		if err != nil || !strings.Contains(got, tc.want) || strings.Contains(got, tc.not) {
			t.Errorf("Render %s = (%v)\n%s\nwant %q in it, and no %q", tc.format, err, got, tc.want, tc.not)
		}
	}
	if _, err := Render(g, "svg", nil); err == nil || !strings.Contains(err.Error(), "text, mermaid, dot") {
		t.Errorf("Render svg: %v, want a refusal naming the formats", err)
	}
}
