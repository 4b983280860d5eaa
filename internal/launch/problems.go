package launch

import (
	"fmt"
	"path/filepath"
	"strings"

	"aipm/fsstore"
	"aipm/internal/clientconfig"
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
	hooks, _ := clientconfig.AipmCodexHooks(filepath.Join(store.ProjectDir(), clientconfig.CodexHooksFile))
	for _, a := range cfg.Agents {
		if a.Type != fsstore.AgentAI || len(a.Command) == 0 {
			continue
		}
		spec, ok, err := SpecOf(a.Command)
		switch {
		case ok && err != nil:
			add(a, "%v (fix it with aipm agent set %s --client claude or --client codex)", err, a.ID)
		case ok:
			if msg := Missing(path, spec); msg != "" {
				add(a, "%s", msg)
			}
		case runsCodex(a.Command) && len(hooks) == 0:
			add(a, "its command runs codex without aipm's hooks, so an interrupt cannot stop it between tool calls: run aipm agent set %s --client codex", a.ID)
		}
	}
	return out
}

// runsCodex says whether a command starts Codex itself: its program, or
// a shell's script that runs "codex".
func runsCodex(command []string) bool {
	if filepath.Base(command[0]) == "codex" {
		return true
	}
	for _, arg := range command[1:] {
		for _, word := range strings.Fields(arg) {
			if word == "codex" || strings.HasSuffix(word, "/codex") {
				return true
			}
		}
	}
	return false
}
