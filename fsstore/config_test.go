package fsstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestExampleConfigLoads(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "config.example.toml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseConfig("config.example.toml", data)
	if err != nil {
		t.Fatalf("config.example.toml: %v", err)
	}
	if len(cfg.Agents) != 2 || cfg.Defaults.WaitSeconds != 25 || cfg.Defaults.SessionIdleTimeout.Duration != time.Hour {
		t.Errorf("unexpected config: %+v", cfg)
	}
	if team, ok := cfg.Group("team"); !ok || len(team) != 2 {
		t.Errorf("[groups] team = %v", team)
	}
	coder, _ := cfg.Agent("coder")
	if len(coder.Command) == 0 || coder.Parent != "lead" || coder.Env["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] != "16000" {
		t.Errorf("coder = %+v", coder)
	}
}

// TestConfigUnknownKeysWarn: an unknown key is a warning naming its line,
// not an error: the config works without it.
func TestConfigUnknownKeysWarn(t *testing.T) {
	for _, tc := range []struct {
		name, toml, want string
	}{
		{"unknown top key", "[project]\nname = \"x\"\n\ncolour = 1\n", "config.toml:4: unknown key \"project.colour\" is ignored"},
		{"unknown table", "[bogus]\nx = 1\n", "config.toml:1: unknown key \"bogus"},
		{"unknown agent key", "[[agents]]\nid = \"a\"\ntype = \"ai\"\nmood = \"ok\"\n", "config.toml:4: unknown key \"agents.mood\" is ignored"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseConfig("config.toml", []byte(tc.toml))
			if err != nil {
				t.Fatal(err)
			}
			if len(cfg.Warnings) != 1 || !strings.HasPrefix(cfg.Warnings[0].Error(), tc.want) {
				t.Errorf("warnings %q\n want one with prefix %q", cfg.Warnings, tc.want)
			}
		})
	}
}

// TestCheckConfigEvery: every error of a config at once, in line order.
func TestCheckConfigEvery(t *testing.T) {
	data := "[defaults]\ndurability = \"maybe\"\nwait_seconds = 90\n\n[[agents]]\nid = \"a\"\ntype = \"robot\"\nparent = \"ghost\"\n\n[[agents]]\ntype = \"ai\"\n"
	_, errs := CheckConfig("config.toml", []byte(data))
	var got []string
	for _, err := range errs {
		got = append(got, err.Error())
	}
	want := []string{"config.toml:2: durability", "config.toml:3: wait_seconds", "config.toml:7: agent \"a\": type", "config.toml:8: agent \"a\": parent", "config.toml:10: agent entry 2 has no id"}
	if len(got) != len(want) {
		t.Fatalf("errors:\n%s\nwant %d", strings.Join(got, "\n"), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("error %d = %q, want prefix %q", i, got[i], want[i])
		}
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, toml, want string
	}{
		{"syntax", "[project]\nname = \n", "config.toml:2: "},
		{"empty", "\n# nothing\n", "config.toml:1: the config is empty"},
		{"bad id", "[[agents]]\ntype = \"ai\"\nid = \"../x\"\n", "config.toml:3: agent id \"../x\" is invalid"},
		{"reserved id", "[[agents]]\nid = \"system\"\ntype = \"ai\"\n", "config.toml:2: agent id \"system\" is reserved"},
		{"missing id", "[[agents]]\ntype = \"ai\"\n", "config.toml:1: agent entry 1 has no id"},
		{"duplicate", "[[agents]]\nid = \"a\"\ntype = \"ai\"\n[[agents]]\nid = \"a\"\ntype = \"ai\"\n", "config.toml:5: agent id \"a\" is defined twice (first at line 2)"},
		{"parent", "[[agents]]\nid = \"a\"\ntype = \"ai\"\nparent = \"nobody\"\n", "config.toml:4: agent \"a\": parent \"nobody\" is not a configured agent"},
		{"type", "[[agents]]\nid = \"a\"\ntype = \"robot\"\n", "config.toml:3: agent \"a\": type \"robot\" is invalid"},
		{"role", "[[agents]]\nid = \"a\"\ntype = \"ai\"\nrole = \"boss\"\n", "config.toml:4: agent \"a\": role \"boss\""},
		{"durability", "[defaults]\ndurability = \"maybe\"\n", "config.toml:2: durability \"maybe\" is invalid"},
		{"wait", "[defaults]\n\nwait_seconds = 90\n", "config.toml:3: wait_seconds = 90 is out of range"},
		{"duration", "[defaults]\ntrigger_ttl = \"soon\"\n", "config.toml:2: "},
		{"wrong type", "[defaults]\nwait_seconds = \"x\"\n", "config.toml:2: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig("config.toml", []byte(tc.toml))
			if err == nil {
				t.Fatalf("no error; want %q", tc.want)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %q\n want prefix %q", err, tc.want)
			}
		})
	}
}

func TestParseConfigDefaults(t *testing.T) {
	cfg, err := ParseConfig("config.toml", []byte("[project]\nname = \"p\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Defaults != DefaultDefaults {
		t.Errorf("defaults = %+v, want %+v", cfg.Defaults, DefaultDefaults)
	}
}

// Durability follows the config each load finds, while other goroutines
// append (a server's config reload under calls in flight): under -race this
// is the check that the store's durability is read and written atomically.
func TestDurabilityFollowsTheConfig(t *testing.T) {
	s, _ := testStoreWith(t)
	ctx := context.Background()
	setDurability := func(value string) {
		t.Helper()
		data, err := os.ReadFile(s.ConfigPath())
		if err != nil {
			t.Fatal(err)
		}
		text := regexp.MustCompile(`durability = "[a-z]+"`).ReplaceAllString(string(data), fmt.Sprintf("durability = %q", value))
		if err := os.WriteFile(s.ConfigPath(), []byte(text), ModeFile); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(s.Root(), "probe.jsonl")
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if err := s.AppendJSONL(ctx, path, map[string]int{"i": i}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for _, value := range []string{DurableNone, DurableFsync, DurableNone} {
		setDurability(value)
		if _, err := s.LoadConfig(); err != nil {
			t.Fatal(err)
		}
		if got := s.durable.Load(); got != (value == DurableFsync) {
			t.Errorf("durability %q loaded: durable = %v", value, got)
		}
	}
	wg.Wait()
	setDurability("sometimes")
	if _, err := s.LoadConfig(); err == nil {
		t.Fatal("an invalid durability loaded")
	}
	if s.durable.Load() {
		t.Error("an invalid config changed the durability in force")
	}
}
