package codex

import (
	"strings"
	"testing"
)

// TestRunsCodex: a command that starts Codex itself, or a shell script
// that runs it.
func TestRunsCodex(t *testing.T) {
	for cmd, want := range map[string]bool{
		"codex exec hi":                   true,
		"/usr/local/bin/codex exec":       true,
		"sh -c|cd x && codex exec go":     true,
		"sh -c|/opt/bin/codex exec":       true,
		"claude -p hi":                    false,
		"sh -c|echo codexes":              false,
		"aipm launch codex":               true, // SpecOf takes it first
		"python3 drive.py --tool=codex-x": false,
	} {
		var command []string
		if head, script, ok := strings.Cut(cmd, "|"); ok {
			command = append(strings.Fields(head), script)
		} else {
			command = strings.Fields(cmd)
		}
		if got := runsCodex(command); got != want {
			t.Errorf("runsCodex(%q) = %v, want %v", command, got, want)
		}
	}
}
