package mcpserver_test

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"aipm/internal/scriptedmodel"
	"aipm/mcpserver"
)

// TestToolSearchLoadsNamedTools: a client that shows the model only the
// tools' names until it searches (Claude Code's tool search, on by
// default; Codex's, for a model it knows) loads, with the one search the
// server instructions give, every tool that anything aipm says names: the
// instructions, get_next_action's instruction for every action,
// authenticate's answer, the error texts, the descriptions, the hook's
// context lines. Those are collected from the string literals of the code
// that writes them (model-facing packages), so that a new answer naming a
// tool is checked without a list to keep up. The search is read from the
// instructions as each client shows them (Claude Code whole, Codex their
// first 247 characters) and called in their words with each client's own
// search tool's parameters (scriptedmodel.SearchHintCall, which the
// end-to-end tests of the real clients use too), then played over the
// tools as the server lists them, as each client searches them.
func TestToolSearchLoadsNamedTools(t *testing.T) {
	p := newProject(t)
	cs := connectInProcess(t, mcpserver.New(p.store, slog.New(slog.NewTextHandler(io.Discard, nil)), "test").MCP())
	instructions := cs.InitializeResult().Instructions
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, tool := range res.Tools {
		served[tool.Name] = true
	}
	named := namedTools(t, served, "../mcpserver", "../fsstore", "../hook")
	// The scan reads what is served: it finds the tools the served
	// instructions name.
	for name := range served {
		if wordIn(instructions, name) && named[name] == "" {
			t.Errorf("the served instructions name %s, but no string literal of the scanned code does: the scan misses what the model reads", name)
		}
	}
	for _, c := range []struct {
		client string
		// shown is the request as the client shows the model the
		// instructions and its search tool, before any search.
		shown *scriptedmodel.Request
		// search plays the client's search and returns the tools it
		// loads, by the names the server gives them.
		search func(input map[string]any) []string
	}{
		{"Claude Code", &scriptedmodel.Request{API: scriptedmodel.Anthropic, Text: "\n## " + clientServerName + "\n" + instructions + "\n\n",
			Tools: []scriptedmodel.Tool{{Name: "ToolSearch", Search: true, Parameters: searchSchema("query", "max_results")}}},
			func(input map[string]any) []string {
				var deferred []deferredTool
				for _, tool := range res.Tools {
					deferred = append(deferred, deferredTool{"mcp__" + clientServerName + "__" + tool.Name, tool.Description})
				}
				var loaded []string
				for _, name := range claudeToolSearch(deferred, str(input["query"]), count(input["max_results"], claudeDefaultMaxResults)) {
					loaded = append(loaded, strings.TrimPrefix(name, "mcp__"+clientServerName+"__"))
				}
				return loaded
			}},
		{"Codex", &scriptedmodel.Request{API: scriptedmodel.OpenAI, Text: "\n- mcp__" + clientServerName + ": " + codexShown(instructions) + "\n",
			Tools: []scriptedmodel.Tool{{Name: "tool_search", Search: true, Parameters: searchSchema("query", "limit")}}},
			func(input map[string]any) []string {
				var docs []codexSearchDoc
				for _, tool := range res.Tools {
					docs = append(docs, codexMCPSearchDoc(clientServerName, instructions, tool))
				}
				return codexToolSearch(docs, str(input["query"]), count(input["limit"], codexDefaultLimit))
			}},
	} {
		call, ok := scriptedmodel.SearchHintCall(c.shown)
		if !ok {
			t.Errorf("%s: the instructions as %s shows them give no search: %q", c.client, c.client, scriptedmodel.ServerInstructions(c.shown, clientServerName))
			continue
		}
		loadedNames := c.search(call.Input)
		loaded := map[string]bool{}
		for _, name := range loadedNames {
			loaded[name] = true
		}
		var missing []string
		for name, where := range named {
			if !loaded[name] {
				missing = append(missing, fmt.Sprintf("%s (named at %s)", name, where))
			}
		}
		slices.Sort(missing)
		if len(missing) > 0 {
			t.Errorf("%s: the search the instructions give (%q, called with %v) loads %d of %d tools (%s), not these %d that aipm's texts name:\n  %s",
				c.client, scriptedmodel.Hint(c.shown), call.Input, len(loaded), len(served), strings.Join(loadedNames, ", "), len(missing), strings.Join(missing, "\n  "))
		}
	}
}

// searchSchema is a search tool's input schema with these properties.
func searchSchema(props ...string) map[string]any {
	m := map[string]any{}
	for _, p := range props {
		m[p] = map[string]any{}
	}
	return map[string]any{"type": "object", "properties": m}
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// count is a search call's count argument, or def when it gives none.
func count(v any, def int) int {
	if n, ok := v.(int); ok {
		return n
	}
	return def
}

// claudeDefaultMaxResults is how many tools Claude Code's ToolSearch loads
// when the call gives no max_results.
const claudeDefaultMaxResults = 5

// deferredTool is a tool as Claude Code's ToolSearch sees it: its name as
// the client names it, and its description.
type deferredTool struct{ name, description string }

// claudeToolSearch plays Claude Code's ToolSearch (query, max_results) over
// deferred MCP tools and returns the names it loads, as that tool
// documents its query forms and ranks keywords:
//   - "select:a,b,c" loads exactly the tools so named;
//   - a query that is a tool's whole name (any case) loads that tool;
//   - a query starting mcp__ loads the tools whose names start with it;
//   - otherwise the query's words are keywords, a word prefixed + being
//     required (in a part of the name or, as a word, in the description):
//     each keyword scores 12 for a part of the name it equals
//     (mcp__server__tool_name splits at _), else 6 for a part containing
//     it, else 3 when nothing scored yet and the name's words contain it,
//     and 2 more when it is a word of the description; the tools scoring
//     above 0 load, highest first (ties in list order), at most
//     max_results of them.
func claudeToolSearch(tools []deferredTool, query string, maxResults int) []string {
	if rest, ok := cutPrefixFold(query, "select:"); ok {
		return selectTools(tools, rest)
	}
	q := strings.ToLower(strings.TrimSpace(query))
	for _, tool := range tools {
		if strings.ToLower(tool.name) == q {
			return []string{tool.name}
		}
	}
	if strings.HasPrefix(q, "mcp__") && len(q) > len("mcp__") {
		if found := toolsPrefixed(tools, q, maxResults); len(found) > 0 {
			return found
		}
	}
	return keywordSearch(tools, q, maxResults)
}

// selectTools is ToolSearch's select:a,b,c: the tools named exactly so
// (each once), in the order named.
func selectTools(tools []deferredTool, list string) []string {
	var found []string
	for _, want := range strings.Split(list, ",") {
		want = strings.TrimSpace(want)
		for _, tool := range tools {
			if tool.name == want && !slices.Contains(found, tool.name) {
				found = append(found, tool.name)
			}
		}
	}
	return found
}

// toolsPrefixed is ToolSearch's mcp__ query: the first maxResults tools
// whose lower-cased names start with prefix.
func toolsPrefixed(tools []deferredTool, prefix string, maxResults int) []string {
	var found []string
	for _, tool := range tools {
		if strings.HasPrefix(strings.ToLower(tool.name), prefix) && len(found) < maxResults {
			found = append(found, tool.name)
		}
	}
	return found
}

// keywordSearch is ToolSearch's keyword query q (lower-cased): of the
// tools that have every required (+) word, those scoring above 0, highest
// first (ties in list order), at most maxResults of them.
func keywordSearch(tools []deferredTool, q string, maxResults int) []string {
	required, scoring := searchTerms(q)
	type scored struct {
		name  string
		score int
	}
	var ranked []scored
	for _, tool := range tools {
		parts, full := mcpNameParts(tool.name)
		desc := strings.ToLower(tool.description)
		if !hasEveryTerm(parts, desc, required) {
			continue
		}
		if score := keywordScore(parts, full, desc, scoring); score > 0 {
			ranked = append(ranked, scored{tool.name, score})
		}
	}
	slices.SortStableFunc(ranked, func(a, b scored) int { return b.score - a.score })
	var found []string
	for _, r := range ranked[:min(len(ranked), maxResults)] {
		found = append(found, r.name)
	}
	return found
}

// searchTerms splits a keyword query into its required words (those
// prefixed +, without it) and the words that score: every word as given
// when none is required, else the required ones, then the others.
func searchTerms(q string) (required, scoring []string) {
	terms := strings.Fields(q)
	var optional []string
	for _, term := range terms {
		if strings.HasPrefix(term, "+") && len(term) > 1 {
			required = append(required, term[1:])
		} else {
			optional = append(optional, term)
		}
	}
	if len(required) == 0 {
		return nil, terms
	}
	return required, append(required, optional...)
}

// termInName says whether term equals a part of a tool's name (exact) and
// whether one contains it (partial).
func termInName(parts []string, term string) (exact, partial bool) {
	for _, part := range parts {
		exact = exact || part == term
		partial = partial || strings.Contains(part, term)
	}
	return exact, partial
}

// hasEveryTerm says whether each of terms is in a part of the tool's name
// or a word of its description.
func hasEveryTerm(parts []string, desc string, terms []string) bool {
	for _, term := range terms {
		exact, partial := termInName(parts, term)
		if !exact && !partial && !wordIn(desc, term) {
			return false
		}
	}
	return true
}

// keywordScore is a tool's score for the terms: each scores 12 for a part
// of the name it equals, else 6 for a part containing it, else 3 when
// nothing scored yet and the name's words contain it, and 2 more when it
// is a word of the description.
func keywordScore(parts []string, full, desc string, terms []string) int {
	score := 0
	for _, term := range terms {
		switch exact, partial := termInName(parts, term); {
		case exact:
			score += 12
		case partial:
			score += 6
		}
		if strings.Contains(full, term) && score == 0 {
			score += 3
		}
		if wordIn(desc, term) {
			score += 2
		}
	}
	return score
}

// mcpNameParts splits an MCP tool's client name (mcp__server__tool_name),
// lower-cased and without mcp__, into its parts (at __ and _) and its
// words joined by spaces.
func mcpNameParts(name string) (parts []string, full string) {
	rest := strings.ToLower(strings.TrimPrefix(name, "mcp__"))
	parts = strings.FieldsFunc(rest, func(r rune) bool { return r == '_' })
	return parts, strings.NewReplacer("__", " ", "_", " ").Replace(rest)
}

// cutPrefixFold is strings.CutPrefix ignoring the case of prefix.
func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) > len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// wordPattern matches word as a whole word (ASCII word characters, _
// included, on neither side): a regular expression's \b, as ToolSearch
// matches a keyword in a description.
func wordPattern(word string) *regexp.Regexp {
	return regexp.MustCompile(`\b` + regexp.QuoteMeta(word) + `\b`)
}

// wordIn says whether word occurs in text as a whole word.
func wordIn(text, word string) bool { return wordPattern(word).MatchString(text) }

// namedTools finds the served tools named, as whole words, in the string
// literals of the non-test Go files of dirs: the texts aipm writes for the
// model. It maps each to the first place that names it.
func namedTools(t *testing.T, served map[string]bool, dirs ...string) map[string]string {
	t.Helper()
	named := map[string]string{}
	patterns := map[string]*regexp.Regexp{}
	for name := range served {
		patterns[name] = wordPattern(name)
	}
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no Go files in %s: %v", dir, err)
		}
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				text, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatalf("%s: %v", fset.Position(lit.Pos()), err)
				}
				for name, pattern := range patterns {
					if named[name] == "" && pattern.MatchString(text) {
						pos := fset.Position(lit.Pos())
						named[name] = fmt.Sprintf("%s:%d", filepath.ToSlash(filepath.Join(filepath.Base(dir), filepath.Base(pos.Filename))), pos.Line)
					}
				}
				return true
			})
		}
	}
	return named
}

// TestClaudeToolSearch holds claudeToolSearch to the query forms ToolSearch
// documents: select: of several names, keywords loading the best
// max_results (5 by default), a + word required in the name.
func TestClaudeToolSearch(t *testing.T) {
	var tools []deferredTool
	for i := range 7 {
		tools = append(tools, deferredTool{fmt.Sprintf("mcp__slack__read_channel_%d", i), "Read a channel."})
	}
	tools = append(tools,
		deferredTool{"mcp__slack__send_message", "Send a message to a channel."},
		deferredTool{"mcp__mail__send_message", "Send a mail message."},
		deferredTool{"mcp__github__create_issue", "Create an issue; unlike slack, it lasts."},
	)
	for _, tc := range []struct {
		query string
		max   int
		want  []string
	}{
		{"select:mcp__mail__send_message,mcp__github__create_issue,nope", 5, []string{"mcp__mail__send_message", "mcp__github__create_issue"}},
		{"SELECT:mcp__mail__send_message", 5, []string{"mcp__mail__send_message"}},
		{"select:send_message", 5, nil}, // names are the client's, server prefix and all
		{"MCP__MAIL__SEND_MESSAGE", 5, []string{"mcp__mail__send_message"}},
		{"mcp__github", 5, []string{"mcp__github__create_issue"}},
		{"send message", 5, []string{"mcp__slack__send_message", "mcp__mail__send_message"}},
		{"+slack send", 5, []string{"mcp__slack__send_message", "mcp__slack__read_channel_0", "mcp__slack__read_channel_1", "mcp__slack__read_channel_2", "mcp__slack__read_channel_3"}},
		{"+slack", 20, append(names(tools[:8]), "mcp__github__create_issue")}, // the description says slack
		{"channel", claudeDefaultMaxResults, names(tools[:5])},
		{"send_message", 5, nil}, // a name's word is split at _, and no description says send_message
		{"iss", 5, []string{"mcp__github__create_issue"}},
	} {
		if got := claudeToolSearch(tools, tc.query, tc.max); !slices.Equal(got, tc.want) {
			t.Errorf("search %q (max_results %d): %v, want %v", tc.query, tc.max, got, tc.want)
		}
	}
}

func names(tools []deferredTool) []string {
	var out []string
	for _, tool := range tools {
		out = append(out, tool.name)
	}
	return out
}
