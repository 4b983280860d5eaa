package scriptedmodel

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// searchHint is the sentence of aipm's server instructions that gives the
// one search loading every aipm tool: its quoted query, then the rest of
// the sentence, which names the count's parameter(s) and the count.
var searchHint = regexp.MustCompile(`search[^"\n.]*"([^"\n]+)"([^.\n]*)`)

// ServerInstructions are the instructions of the MCP server named server
// as r shows them to the model, or "": Claude Code puts each server's
// under a heading "## NAME" in its system prompt; Codex lists a deferred
// server's tools as "- mcp__NAME: " and the start of its instructions.
func ServerInstructions(r *Request, server string) string {
	if i := strings.Index(r.Text, "\n## "+server+"\n"); i >= 0 && r.API == Anthropic {
		rest := r.Text[i+len("\n## "+server+"\n"):]
		if end := strings.Index(rest, "\n\n"); end >= 0 {
			rest = rest[:end]
		}
		return rest
	}
	if i := strings.Index(r.Text, "\n- mcp__"+server+": "); i >= 0 && r.API == OpenAI {
		rest := r.Text[i+len("\n- mcp__"+server+": "):]
		if end := strings.Index(rest, "\n"); end >= 0 {
			rest = rest[:end]
		}
		return rest
	}
	return ""
}

// SearchHintCall is the call of r's tool search that the instructions of
// aipm's server, as r shows them to the model, give: their quoted query,
// and their count under each parameter of the search tool the sentence
// names (Claude Code's max_results, Codex's limit). A model follows the
// words it reads and the schema it is given; so does this. ok is false
// when r offers no tool search or the instructions shown give no search.
func SearchHintCall(r *Request) (call Call, ok bool) {
	search, ok := r.SearchTool()
	if !ok {
		return Call{}, false
	}
	m := searchHint.FindStringSubmatch(ServerInstructions(r, "aipm"))
	if m == nil {
		return Call{}, false
	}
	input := map[string]any{"query": m[1]}
	count := regexp.MustCompile(`\d+`).FindString(m[2])
	props, _ := search.Parameters["properties"].(map[string]any)
	var names []string
	for name := range props {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if name == "query" || count == "" || !regexp.MustCompile(`\b`+regexp.QuoteMeta(name)+`\b`).MatchString(m[2]) {
			continue
		}
		n, _ := strconv.Atoi(count)
		input[name] = n
	}
	return Call{Name: search.Name, Input: input, Search: true}, true
}

// Hint is the search sentence of aipm's instructions as r shows them
// (SearchHintCall reads it), or "".
func Hint(r *Request) string {
	return strings.TrimSpace(searchHint.FindString(ServerInstructions(r, "aipm")))
}
