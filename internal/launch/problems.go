package launch

import (
	"fmt"

	"aipm/fsstore"
	"aipm/internal/clients"
)

// StartProblems are the agents aipm watch cannot start as configured,
// each with the command that fixes it: a launched client that is not on
// PATH, an aipm launch command that does not parse, and a Codex started
// by a command of its own without aipm's hooks (an interrupt could not
// stop it between tool calls). A missing saved passkey is the store's
// check (fsstore passkeyProblems). path is the PATH value aipm watch runs
// with.
func StartProblems(path string, store *fsstore.Store, cfg *fsstore.Config) []fsstore.Problem {
	if cfg == nil {
		return nil
	}
	config := store.Rel(store.ConfigPath())
	var out []fsstore.Problem
	add := func(a fsstore.Agent, format string, args ...any) {
		out = append(out, fsstore.Problem{Path: config, Reason: fmt.Sprintf("agent %s: ", a.ID) + fmt.Sprintf(format, args...)})
	}
	for _, a := range cfg.Agents {
		if a.Type != fsstore.AgentAI || len(a.Command) == 0 {
			continue
		}
		spec, ok, err := SpecOf(a.Command)
		switch {
		case ok && err != nil:
			add(a, "%v (fix it with aipm agent set %s %s)", err, a.ID, clients.Known("--client"))
		case ok:
			if msg := Missing(path, spec); msg != "" {
				add(a, "%s", msg)
			}
		default:
			if c, unhooked := unhookedClient(store.ProjectDir(), a.Command); unhooked {
				add(a, "its command runs %s without aipm's hooks, so an interrupt cannot stop it between tool calls: run aipm agent set %s --client %s", c.Program, a.ID, c.Name)
			}
		}
	}
	return out
}

// unhookedClient is the client command starts, by a command of its own,
// without aipm's hooks (clients.Client.Unhooked), if any.
func unhookedClient(projectDir string, command []string) (clients.Client, bool) {
	for _, name := range clients.Names() {
		if c, _ := clients.Get(name); c.Unhooked != nil && c.Unhooked(projectDir, command) {
			return c, true
		}
	}
	return clients.Client{}, false
}
