package storage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestExampleConfigLoads(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "config.example.toml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseConfig("config.example.toml", data)
	if err != nil {
		t.Fatalf("config.example.toml: %v", err)
	}
	if len(cfg.Warnings) > 0 {
		t.Errorf("config.example.toml names a key aipm does not read: %v", cfg.Warnings)
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
		{"typo in defaults", "[defaults]\nwait_seconds = 5\nchat_idel_timeout = \"5m\"\n", "config.toml:3: unknown key \"defaults.chat_idel_timeout\" is ignored: did you mean chat_idle_timeout? (aipm config example"},
		{"typo of a table", "[project]\nname = \"p\"\n[defualts]\nwait_seconds = 5\n", "config.toml:3: unknown key \"defualts\" is ignored: did you mean defaults?"},
		{"typo in an agent", "[[agents]]\nid = \"a\"\ntype = \"ai\"\ncomand = [\"x\"]\n", "config.toml:4: unknown key \"agents.comand\" is ignored: did you mean command?"},
		{"typo in a sub-table", "[notifications.ttl]\nnew-message = \"1h\"\n", "config.toml:2: unknown key \"notifications.ttl.new-message\" is ignored: did you mean new_message?"},
		{"unknown sub-table", "[project]\nname = \"p\"\n[project.extra]\ny = 1\n", "config.toml:3: unknown key \"project.extra\" is ignored: fix or remove it"},
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
		{"duration", "[defaults]\ntrigger_ttl = \"soon\"\n", "config.toml:2: trigger_ttl: invalid duration \"soon\": write it like"},
		{"lease ttl over its maximum", "[defaults]\nlease_max_ttl = \"2h\"\nlease_ttl = \"3h\"\n", "config.toml:3: lease_ttl = 3h0m0s is longer than lease_max_ttl = 2h0m0s"},
		{"lease ttl over the default maximum", "[defaults]\nlease_ttl = \"9h\"\n", "config.toml:2: lease_ttl = 9h0m0s is longer than lease_max_ttl = 8h0m0s"},
		{"lease ttl too short", "[defaults]\nlease_ttl = \"10ms\"\n", "config.toml:2: lease_ttl = 10ms is too short"},
		{"syntax said", "[project]\nname = \"p\"\nname = \"q\"\n", "config.toml:3: this line is not valid TOML (Key 'project.name' has already been defined): fix it"},
		{"string for a number", "[defaults]\n\nwait_seconds = \"x\"\n", "config.toml:3: wait_seconds must be a whole number (got a string \"x\")"},
		{"fraction for a number", "[defaults]\nmax_concurrent = 2.5\n", "config.toml:2: max_concurrent must be a whole number (got the number 2.5)"},
		{"number for a duration", "[defaults]\nchat_idle_timeout = 30\n", "config.toml:2: chat_idle_timeout must be a duration in quotes, such as \"90s\""},
		{"number for a string", "[project]\nname = 7\n", "config.toml:2: name must be a string in quotes (got the number 7)"},
		{"string for a list", "[[agents]]\nid = \"a\"\ntype = \"ai\"\ncommand = \"claude\"\n", "config.toml:4: command must be a list of strings, such as [\"a\", \"b\"] (got a string \"claude\")"},
		{"number in a list", "[groups]\nteam = [\"a\", 2]\n", "config.toml:2: groups.team must be a list of strings, such as [\"a\", \"b\"] (got a list holding the number 2)"},
		{"inline table entry", "[[agents]]\nid = \"a\"\ntype = \"ai\"\nenv = { A = 1 }\n", "config.toml:4: env.A must be a string in quotes (got the number 1)"},
		{"ttl", "[notifications.ttl]\ninfo = true\n", "config.toml:2: info must be \"never\" or a time in quotes"},
		{"any case", "[Defaults]\nWait_Seconds = \"x\"\n", "config.toml:2: Wait_Seconds must be a whole number"},
		{"value for a table", "defaults = 1\n", "config.toml:1: defaults must be a table (got the number 1)"},
		{"table for a list of tables", "[agents]\nid = \"a\"\n", "config.toml:1: agents must be a list of tables (got a table)"},
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

// TestConfigTypeErrorsAll: doctor lists every value of the wrong type at
// once, in line order, none in the TOML decoder's words.
func TestConfigTypeErrorsAll(t *testing.T) {
	data := "[defaults]\nwait_seconds = \"x\"\nspawn_cooldown = \"soon\"\n\n[retention]\nchat_lines = \"many\"\n"
	_, errs := CheckConfig("config.toml", []byte(data))
	want := []string{"config.toml:2: wait_seconds must be", "config.toml:3: spawn_cooldown: invalid duration", "config.toml:6: chat_lines must be a whole number"}
	if len(errs) != len(want) {
		t.Fatalf("errors %q, want %d", errs, len(want))
	}
	for i, err := range errs {
		if !strings.HasPrefix(err.Error(), want[i]) {
			t.Errorf("error %d = %q, want prefix %q", i, err, want[i])
		}
	}
}

func TestNearestKey(t *testing.T) {
	known := knownKeys([]string{"defaults"})
	if !slices.Contains(known, "chat_idle_timeout") || slices.Contains(known, "id") {
		t.Fatalf("known keys of [defaults] = %v", known)
	}
	for _, tc := range []struct{ key, want string }{
		{"chat_idel_timeout", "chat_idle_timeout"}, // swapped letters
		{"wait_second", "wait_seconds"},            // one left out
		{"Max-Concurrent", "max_concurrent"},       // case and '-'
		{"durabilty", "durability"},
		{"colour", ""}, // near nothing
		{"wait", ""},   // a prefix is not a typo
	} {
		if got := Nearest(tc.key, known); got != tc.want {
			t.Errorf("Nearest(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}
	flags := []string{"dir", "as", "parent", "save-passkey", "type"}
	for _, tc := range []struct{ word, want string }{
		{"dri", "dir"},                  // swapped, in a short word
		{"parnet", "parent"},            // swapped
		{"save_pasKey", "save-passkey"}, // '_' for '-', case, a letter left out
		{"sa", ""},                      // too short to guess
		{"colour", ""},                  // near nothing
	} {
		if got := Nearest(tc.word, flags); got != tc.want {
			t.Errorf("Nearest(%q) among flags = %q, want %q", tc.word, got, tc.want)
		}
	}
	if got := knownKeys([]string{"agents"}); !slices.Contains(got, "command") {
		t.Errorf("known keys of an [[agents]] entry = %v", got)
	}
	if got := knownKeys([]string{"bogus"}); got != nil {
		t.Errorf("known keys of an unknown table = %v", got)
	}
}

// TestNewWarnings: a reload says only the unknown keys the config in
// force did not have, wherever they moved.
func TestNewWarnings(t *testing.T) {
	parse := func(data string) *Config {
		t.Helper()
		cfg, err := ParseConfig("config.toml", []byte(data))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	old := parse("[defaults]\nchat_idel_timeout = \"5m\"\n")
	if got := NewWarnings(nil, old); len(got) != 1 {
		t.Fatalf("first load: %q", got)
	}
	moved := parse("[project]\nname = \"p\"\n[defaults]\nchat_idel_timeout = \"5m\"\n")
	if got := NewWarnings(old, moved); len(got) != 0 {
		t.Errorf("the same key on another line: %q", got)
	}
	more := parse("[defaults]\nchat_idel_timeout = \"5m\"\nwait_secs = 3\n")
	if got := NewWarnings(old, more); len(got) != 1 || !strings.Contains(got[0].Error(), "config.toml:3: unknown key \"defaults.wait_secs\"") {
		t.Errorf("a new key: %q", got)
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
	s := newTestFiles(t)
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
		if got := s.Durable.Load(); got != (value == DurableFsync) {
			t.Errorf("durability %q loaded: durable = %v", value, got)
		}
	}
	wg.Wait()
	setDurability("sometimes")
	if _, err := s.LoadConfig(); err == nil {
		t.Fatal("an invalid durability loaded")
	}
	if s.Durable.Load() {
		t.Error("an invalid config changed the durability in force")
	}
}

// TestTellWhom: an agent's human parent, else every human.
func TestTellWhom(t *testing.T) {
	c := &Config{Agents: []Agent{
		{ID: "lead", Type: AgentHuman, Role: RoleManager},
		{ID: "ops", Type: AgentHuman},
		{ID: "coder", Type: AgentAI, Parent: "lead"},
		{ID: "sub", Type: AgentAI, Parent: "coder"},
		{ID: "bot", Type: AgentAI},
	}}
	for _, tc := range []struct {
		agent string
		want  []string
	}{
		{"coder", []string{"lead"}},
		{"sub", []string{"lead", "ops"}}, // its parent is no human
		{"bot", []string{"lead", "ops"}},
		{"ghost", []string{"lead", "ops"}},
	} {
		if got := c.TellWhom(tc.agent); !slices.Equal(got, tc.want) {
			t.Errorf("TellWhom(%s) = %v, want %v", tc.agent, got, tc.want)
		}
	}
}
