package clients

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func mustGet(t *testing.T, name string) Client {
	t.Helper()
	c, ok := Get(name)
	if !ok {
		t.Fatalf("client %q is not registered", name)
	}
	return c
}

// TestEveryClientWhole: every registered client has its own name and its
// own folder (internal/clients/<name>), every part, its tested version
// the one testdata/realclients pins (when it pins it), and its hooks map
// each of aipm's events or say why they cannot.
func TestEveryClientWhole(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "realclients", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pins struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(data, &pins); err != nil {
		t.Fatal(err)
	}
	if len(Names()) < 2 || Names()[0] != "claude" || Names()[1] != "codex" {
		t.Errorf("Names() = %q, want claude and codex first", Names())
	}
	seen := map[string]bool{}
	for _, name := range Names() {
		if seen[name] {
			t.Errorf("%s is registered twice", name)
		}
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			c := mustGet(t, name)
			if c.Name != name {
				t.Errorf("registered as %q, named %q", name, c.Name)
			}
			if fi, err := os.Stat(name); err != nil || !fi.IsDir() {
				t.Errorf("%s has no folder internal/clients/%s", name, name)
			}
			for part, missing := range map[string]bool{
				"Title": c.Title == "", "Program": c.Program == "", "Package": c.Package == "", "Tested": c.Tested == "", "Install": c.Install == "",
				"Launch": c.Launch == nil, "Output": c.Output == nil, "Trust": c.Trust == nil, "Endpoint": c.Endpoint == nil,
				"ToolName": c.ToolName == nil, "May": c.May == nil, "RefusedBy": c.RefusedBy == "", "Widen": c.Widen == nil,
				"Config.Doc": c.Config.Doc == nil, "Config.Note": c.Config.Note == nil, "Config.Write": c.Config.Write == nil, "Config.URLDoc": c.Config.URLDoc == nil,
				"Hooks.Entries": c.Hooks.Entries == nil, "Hooks.Deny": c.Hooks.Deny == nil, "Hooks.Context": c.Hooks.Context == nil, "Hooks.Block": c.Hooks.Block == nil,
			} {
				if missing {
					t.Errorf("%s has no %s", name, part)
				}
			}
			if pin, ok := pins.Dependencies[c.Package]; ok && pin != c.Tested {
				t.Errorf("%s: Tested is %s, testdata/realclients/package.json pins %s", name, c.Tested, pin)
			}
			checkHooks(t, c)
			for _, access := range []string{AccessRead, AccessProject, AccessFull} {
				if c.May(access) == "" {
					t.Errorf("%s: May(%s) is empty", name, access)
				}
				cmd := c.Launch(Run{Access: access, Exe: "/opt/aipm", HookWord: "aipm-hook", Prompt: "go", Agent: "coder", Getenv: func(string) string { return "" }})
				if len(cmd.Args) == 0 {
					t.Errorf("%s: Launch with access %s has no arguments", name, access)
				}
			}
		})
	}
}

// TestUnknownNamesTheKnown: the one sentence for an unknown client lists
// every registered one.
func TestUnknownNamesTheKnown(t *testing.T) {
	msg := Unknown("vim").Error()
	for _, n := range Names() {
		if !strings.Contains(msg, n) {
			t.Errorf("%q does not name %s", msg, n)
		}
	}
	if _, ok := Get("vim"); ok {
		t.Error("Get(vim) found a client")
	}
	if got := Known("--client"); !strings.HasPrefix(got, "--client claude, --client codex") && got != "--client claude or --client codex" {
		t.Errorf("Known(--client) = %q", got)
	}
}

// checkHooks: c's hooks map each of aipm's events or say why not, and
// name what --wake does.
func checkHooks(t *testing.T, c Client) {
	t.Helper()
	name := c.Name
	mapped := map[string]bool{}
	for theirs, ours := range c.Hooks.Events {
		if !slices.Contains(Events, ours) {
			t.Errorf("%s maps its event %s to %q, not one of aipm's %q", name, theirs, ours, Events)
		}
		mapped[ours] = true
	}
	for _, ev := range Events {
		why, unsupported := c.Hooks.Unsupported[ev]
		switch {
		case mapped[ev] && unsupported:
			t.Errorf("%s both maps %s and says it cannot (%s)", name, ev, why)
		case !mapped[ev] && (!unsupported || why == ""):
			t.Errorf("%s neither maps aipm's %s nor says why it cannot", name, ev)
		}
	}
	if !c.Hooks.Wake && c.Hooks.NoWake == "" {
		t.Errorf("%s has no idle wake and no sentence for --wake", name)
	}
	if len(c.Hooks.Entries("aipm-hook")) == 0 {
		t.Errorf("%s has no hook entries", name)
	}
}
