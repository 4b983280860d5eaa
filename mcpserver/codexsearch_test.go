package mcpserver_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// codexDefaultLimit is how many tools Codex's tool_search loads when the
// call gives no limit (its schema: "Maximum number of tools to return.
// Defaults to 8.").
const codexDefaultLimit = 8

// codexShownChars is how much of an MCP server's instructions Codex 0.171
// shows the model, in its list of deferred tool namespaces, before a
// search: the first 247 characters, then "..." (seen in its requests).
const codexShownChars = 247

// codexShown is instructions as Codex shows them before a search.
func codexShown(instructions string) string {
	if r := []rune(instructions); len(r) > codexShownChars {
		return string(r[:codexShownChars]) + "..."
	}
	return instructions
}

// codexSearchDoc is a deferred tool as Codex's tool_search indexes it: its
// name and the text searched.
type codexSearchDoc struct{ name, text string }

// codexMCPSearchDoc is an MCP tool of server as Codex indexes it for
// tool_search (codex-rs build_mcp_search_text): its flat name, its name
// twice (callable and as served), the server's name, title, description,
// the namespace's description (the server's instructions) and the names
// of its input's properties, sorted.
func codexMCPSearchDoc(server, instructions string, tool *mcp.Tool) codexSearchDoc {
	parts := []string{"mcp__" + server + "__" + tool.Name, tool.Name, tool.Name, server}
	if tool.Title != "" {
		parts = append(parts, tool.Title)
	}
	parts = append(parts, tool.Description, instructions)
	if schema, ok := tool.InputSchema.(map[string]any); ok {
		props, _ := schema["properties"].(map[string]any)
		var keys []string
		for k := range props {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts = append(parts, keys...)
	}
	return codexSearchDoc{tool.Name, strings.Join(parts, " ")}
}

// codexTokens are text's search terms: runs of letters, digits and _
// (the word segmentation keeps _ within a word), lower-cased. Codex's
// BM25 also stems English words and drops stop words; aipm's query needs
// neither.
func codexTokens(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_'
	})
}

// codexToolSearch plays Codex's tool_search (query, limit) over docs and
// returns the names it loads: BM25 (k1 1.2, b 0.75) over the documents'
// terms; every document holding a term of the query matches; the best
// limit of them load, highest score first (ties in list order).
func codexToolSearch(docs []codexSearchDoc, query string, limit int) []string {
	terms := make([][]string, len(docs))
	total := 0
	df := map[string]int{}
	for i, d := range docs {
		terms[i] = codexTokens(d.text)
		total += len(terms[i])
		seen := map[string]bool{}
		for _, term := range terms[i] {
			if !seen[term] {
				seen[term] = true
				df[term]++
			}
		}
	}
	if len(docs) == 0 {
		return nil
	}
	avg := float64(total) / float64(len(docs))
	type scored struct {
		name  string
		score float64
	}
	var ranked []scored
	for i, d := range docs {
		score, matched := 0.0, false
		for _, q := range codexTokens(query) {
			tf := float64(strings.Count(" "+strings.Join(terms[i], " ")+" ", " "+q+" "))
			if tf == 0 {
				continue
			}
			matched = true
			n := float64(df[q])
			idf := math.Log(1 + (float64(len(docs))-n+0.5)/(n+0.5))
			score += idf * tf * 2.2 / (tf + 1.2*(0.25+0.75*float64(len(terms[i]))/avg))
		}
		if matched {
			ranked = append(ranked, scored{d.name, score})
		}
	}
	slices.SortStableFunc(ranked, func(a, b scored) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return 0
	})
	var names []string
	for _, r := range ranked[:min(len(ranked), limit)] {
		names = append(names, r.name)
	}
	return names
}

// TestCodexToolSearch holds codexToolSearch to what Codex's tool_search
// does: every document holding a term matches, the best limit load (8 by
// default), the + of Claude Code's required word is punctuation to it,
// and a term nothing holds loads nothing.
func TestCodexToolSearch(t *testing.T) {
	var docs []codexSearchDoc
	for i := range 10 {
		docs = append(docs, codexSearchDoc{fmt.Sprintf("list_events_%d", i), fmt.Sprintf("mcp__calendar__list_events_%d list_events_%d calendar Calendar events", i, i)})
	}
	docs = append(docs, codexSearchDoc{"send", "mcp__mail__send send mail Send a mail."})
	for _, tc := range []struct {
		query string
		limit int
		want  int
	}{
		{"Calendar events", codexDefaultLimit, 8},
		{"calendar", 40, 10},
		{"+calendar", 40, 10},
		{"mail", codexDefaultLimit, 1},
		{"slack", codexDefaultLimit, 0},
	} {
		if got := codexToolSearch(docs, tc.query, tc.limit); len(got) != tc.want {
			t.Errorf("search %q (limit %d): %v, want %d tools", tc.query, tc.limit, got, tc.want)
		}
	}
	if got := codexToolSearch(docs, "mail calendar", 1); !slices.Equal(got, []string{"send"}) {
		t.Errorf("search %q (limit 1): %v, want the rarer term's tool first", "mail calendar", got)
	}
	if got := codexShown(strings.Repeat("x", 300)); len(got) != codexShownChars+3 || !strings.HasSuffix(got, "...") {
		t.Errorf("codexShown of 300 characters: %d characters", len(got))
	}
}
