package status

import (
	"aipm/fsstore"
	"aipm/internal/table"
)

// AgentEntry is one agent as aipm agent list shows it, and its JSON (agent
// list --json, agent set --json).
type AgentEntry struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Role    string `json:"role"`
	Parent  string `json:"parent,omitempty"`
	Name    string `json:"name,omitempty"`
	Passkey bool   `json:"hasPasskey"`
	// SavedPasskey is whether its passkey is saved for aipm watch, and is
	// its passkey: none, current or stale (fsstore.SavedPasskeyOf).
	SavedPasskey string `json:"savedPasskey,omitempty"`
	// Starts is what aipm watch starts for the agent (a client, a
	// command's first word), May what that may do; both omitted when it
	// has no command.
	Starts string `json:"starts,omitempty"`
	May    string `json:"may,omitempty"`
}

// AgentTable is the one table of agents (aipm agent list): an AI agent's
// passkey MISSING, or STALE when the one saved for aipm watch is not it,
// in red.
func AgentTable(agents []AgentEntry) *table.Table {
	t := &table.Table{Header: []string{"ID", "TYPE", "ROLE", "PARENT", "NAME", "PASSKEY", "STARTS"}}
	for _, a := range agents {
		key := "-"
		if a.Type == fsstore.AgentAI {
			key = map[bool]string{true: "yes", false: "MISSING"}[a.Passkey]
		}
		if key == "yes" && a.SavedPasskey == fsstore.SavedStale {
			key = "STALE" // saved, and not its passkey: aipm doctor says more
		}
		starts := table.Dash(a.Starts)
		if a.May != "" {
			starts += ": may " + a.May
		}
		t.Add(a.ID, a.Type, a.Role, table.Dash(a.Parent), table.Dash(a.Name), key, starts)
	}
	t.Style = func(col int, cell string) string {
		if col == 5 && (cell == "MISSING" || cell == "STALE") {
			return "31"
		}
		return ""
	}
	return t
}
