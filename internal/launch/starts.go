package launch

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"aipm/fsstore"
	"aipm/internal/clientconfig"
)

// Starts is what aipm watch starts for a, in a few words, and what it
// may do: "claude", "edit files and run ..." for a launched client; the
// command's first word (two for aipm's: "aipm sim") and "" otherwise; ""
// when it has no command.
func Starts(a fsstore.Agent) (starts, may string) {
	if len(a.Command) == 0 {
		return "", ""
	}
	spec, ok, err := SpecOf(a.Command)
	switch {
	case ok && err == nil:
		return spec.Client, spec.May()
	case ok:
		return "aipm launch (invalid)", ""
	}
	words := []string{filepath.Base(a.Command[0])}
	if words[0] == clientconfig.ServerName && len(a.Command) > 1 {
		words = append(words, a.Command[1]) // aipm sim
	}
	return strings.Join(words, " "), ""
}

// WarnMissing says, on w, when the client an agent's command
// launches is not on path.
func WarnMissing(w io.Writer, path string, a fsstore.Agent) {
	spec, ok, err := SpecOf(a.Command)
	if !ok || err != nil {
		return
	}
	if msg := Missing(path, spec); msg != "" {
		fmt.Fprintf(w, "aipm: warning: agent %s: %s\n", a.ID, msg)
	}
}
