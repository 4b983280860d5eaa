package storage

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsNoRules: the storage layer imports, of this module, only the
// file mechanics beneath it (lockedfile); the rules import it, never the
// other way.
func TestImportsNoRules(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "aipm/fsstore/internal/storage").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	allowed := map[string]bool{"aipm/fsstore/internal/storage": true, "aipm/internal/lockedfile": true}
	for _, dep := range strings.Fields(string(out)) {
		if (dep == "aipm" || strings.HasPrefix(dep, "aipm/")) && !allowed[dep] {
			t.Errorf("fsstore/internal/storage depends on %s: the storage layer imports no rules package (move what it needs down, or put the rule behind an interface the storage calls, as Settler)", dep)
		}
	}
}
