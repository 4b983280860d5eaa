package storage

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/BurntSushi/toml"
)

// Config is .ai-pm/config.toml: the project, its defaults and its agents.
type Config struct {
	Project  ProjectConfig `toml:"project"`
	Defaults Defaults      `toml:"defaults"`
	Agents   []Agent       `toml:"agents"`
	Groups   Groups        `toml:"groups"`
	// Notifications is [notifications] (config_notifications.go).
	Notifications notificationsConfig `toml:"notifications"`
	// Retain is [retention] (config_retention.go; Retention fills defaults).
	Retain RetentionConfig `toml:"retention"`
	// Warnings name what the config holds that aipm ignores (unknown
	// keys), each as name:LINE: what; commands print the first.
	Warnings []error `toml:"-" json:"-"`
}

// ProjectConfig names the project.
type ProjectConfig struct {
	Name string `toml:"name"`
	ID   string `toml:"id"`
}

// Defaults are the project-wide settings; zero values take DefaultDefaults.
type Defaults struct {
	Durability                 string   `toml:"durability"`
	SessionIdleTimeout         Duration `toml:"session_idle_timeout"`
	ChatIdleTimeout            Duration `toml:"chat_idle_timeout"`
	WaitSeconds                int      `toml:"wait_seconds"`
	ConversationPendingTimeout Duration `toml:"conversation_pending_timeout"`
	ConversationActiveTimeout  Duration `toml:"conversation_active_timeout"`
	MaxConcurrent              int      `toml:"max_concurrent"`
	SpawnCooldown              Duration `toml:"spawn_cooldown"`
	TriggerTTL                 Duration `toml:"trigger_ttl"`
	// AuthenticateWithin is how long a process aipm watch started may run
	// without authenticating (taking its trigger) before the watcher
	// stops it and tells its human: a client that cannot reach its model
	// never gets to its first tool call.
	AuthenticateWithin Duration `toml:"authenticate_within"`
	// UnsurfacedAfter is how long a message may wait unseen (neither
	// handed to a session nor told by a notice) before aipm status flags it.
	UnsurfacedAfter Duration `toml:"unsurfaced_after"`
	// LeaseTTL is how long a file lease lasts when its taker says nothing;
	// LeaseMaxTTL, the longest one may be taken or renewed for.
	LeaseTTL    Duration `toml:"lease_ttl"`
	LeaseMaxTTL Duration `toml:"lease_max_ttl"`
}

// Agent is one [[agents]] entry.
type Agent struct {
	ID      string            `toml:"id"`
	Name    string            `toml:"name"`
	Type    string            `toml:"type"`
	Role    string            `toml:"role"`
	Parent  string            `toml:"parent"`
	Command []string          `toml:"command"`
	Env     map[string]string `toml:"env"`
}

// Agent types and roles.
const (
	AgentAI      = "ai"
	AgentHuman   = "human"
	RoleWorker   = "worker"
	RoleManager  = "manager"
	DurableFsync = "fsync"
	DurableNone  = "none"
	MaxWait      = 50 // seconds; Codex CLI abandons a tool call after 60 s
)

// DefaultDefaults are the values used for settings the config leaves out.
var DefaultDefaults = Defaults{
	Durability:                 DurableFsync,
	SessionIdleTimeout:         Duration{time.Hour},
	ChatIdleTimeout:            Duration{30 * time.Minute},
	WaitSeconds:                25,
	ConversationPendingTimeout: Duration{5 * time.Minute},
	ConversationActiveTimeout:  Duration{10 * time.Minute},
	MaxConcurrent:              4,
	SpawnCooldown:              Duration{30 * time.Second},
	TriggerTTL:                 Duration{10 * time.Minute},
	AuthenticateWithin:         Duration{2 * time.Minute},
	UnsurfacedAfter:            Duration{10 * time.Minute},
	LeaseTTL:                   Duration{time.Hour},
	LeaseMaxTTL:                Duration{8 * time.Hour},
}

// Duration is a TOML string such as "90s" or "1h".
type Duration struct{ time.Duration }

// UnmarshalText reads a positive duration as time.ParseDuration does.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("invalid duration %q: write it like \"90s\", \"10m\" or \"1h\"", b)
	}
	if v <= 0 {
		return fmt.Errorf("duration %q must be positive", b)
	}
	d.Duration = v
	return nil
}

// MarshalText writes d as time.Duration's String does ("1h30m0s").
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

func (*Duration) tomlKind() string { return `a duration in quotes, such as "90s", "10m" or "1h"` }

// Agent returns the agent with the given id.
func (c *Config) Agent(id string) (Agent, bool) {
	for _, a := range c.Agents {
		if a.ID == id {
			return a, true
		}
	}
	return Agent{}, false
}

// LoadConfig reads and checks the project's config.toml.
func (s *Files) LoadConfig() (*Config, error) {
	cfg, err := s.loadSettledConfig()
	if err != nil {
		return nil, err
	}
	s.setDurability(cfg)
	s.SetNotificationTTLs(cfg)
	return cfg, nil
}

// ParseConfig parses and checks a config; every error reads name:LINE: what,
// and the first is returned. An unknown key is not an error: the config
// works without it, and cfg.Warnings names each (a typo, most often).
func ParseConfig(name string, data []byte) (*Config, error) {
	cfg, errs := CheckConfig(name, data)
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return cfg, nil
}

// CheckConfig parses and checks a config and returns every error at once
// (doctor lists them all), in line order; the config is nil when there is
// one.
func CheckConfig(name string, data []byte) (*Config, []error) {
	if emptyConfig(data) {
		return nil, []error{errEmptyConfig(name)}
	}
	var cfg Config
	// The locator finds the line of a key; only an error or a warning
	// needs one.
	c := &configCheck{name: name, data: data, loc: sync.OnceValue(func() *Locator { return NewLocator(data) })}
	md, err := toml.Decode(string(data), &cfg)
	if err != nil {
		return nil, c.decodeErrors(data, err)
	}
	cfg.Warnings = c.unknownKeys(md.Undecoded())
	c.defaults(&cfg.Defaults)
	c.agents(cfg.Agents)
	c.parents(cfg.Agents)
	c.groups(cfg.Groups, cfg.Agents)
	c.retention(cfg.Retain)
	if len(c.errs) > 0 {
		slices.SortStableFunc(c.errs, func(a, b error) int { return errLine(a) - errLine(b) })
		return nil, c.errs
	}
	cfg.applyDefaults()
	return &cfg, nil
}

// errLine is the line a config error names (0: none).
func errLine(err error) int {
	var le *LineError
	if errors.As(err, &le) {
		return le.Line
	}
	return 0
}

// configCheck checks a decoded config, naming the line of what is wrong.
type configCheck struct {
	name string
	data []byte // the config's text
	loc  func() *Locator
	errs []error // every error found, in the order found
}

// line is an error at line of the config.
func (c *configCheck) line(line int, format string, args ...any) error {
	return &LineError{Path: c.name, Line: line, Err: fmt.Errorf(format, args...)}
}

// fail records an error at line of the config.
func (c *configCheck) fail(line int, format string, args ...any) {
	c.errs = append(c.errs, c.line(line, format, args...))
}

// defaults checks the [defaults] values that have a range.
func (c *configCheck) defaults(d *Defaults) {
	switch d.Durability {
	case "", DurableFsync, DurableNone:
	default:
		c.fail(c.loc().find("defaults", -1, "durability"), "durability %q is invalid: use \"fsync\" or \"none\"", d.Durability)
	}
	if d.WaitSeconds < 0 || d.WaitSeconds > MaxWait {
		c.fail(c.loc().find("defaults", -1, "wait_seconds"), "wait_seconds = %d is out of range: use 1 to %d", d.WaitSeconds, MaxWait)
	}
	if d.MaxConcurrent < 0 {
		c.fail(c.loc().find("defaults", -1, "max_concurrent"), "max_concurrent = %d must be at least 1", d.MaxConcurrent)
	}
	ttl, maxTTL := orDefault(d.LeaseTTL, DefaultDefaults.LeaseTTL), orDefault(d.LeaseMaxTTL, DefaultDefaults.LeaseMaxTTL)
	switch {
	case d.LeaseTTL.Duration < 0 || d.LeaseTTL.Duration != 0 && d.LeaseTTL.Duration < time.Second:
		c.fail(c.loc().find("defaults", -1, "lease_ttl"), "lease_ttl = %v is too short: use 1s or more", d.LeaseTTL.Duration)
	case ttl > maxTTL:
		c.fail(c.loc().find("defaults", -1, "lease_ttl"), "lease_ttl = %v is longer than lease_max_ttl = %v: shorten it or raise lease_max_ttl", ttl, maxTTL)
	}
}

// orDefault is d's duration, or def's when d is not set.
func orDefault(d, def Duration) time.Duration {
	if d.Duration == 0 {
		return def.Duration
	}
	return d.Duration
}

// agents checks each [[agents]] entry on its own and the ids' uniqueness.
func (c *configCheck) agents(agents []Agent) {
	seen := map[string]int{}
	for i, a := range agents {
		if a.ID == "" {
			c.fail(c.loc().Section("agents", i), "agent entry %d has no id: add id = \"...\"", i+1)
		} else if err := CheckAgentID(a.ID); err != nil {
			c.fail(c.loc().find("agents", i, "id"), "%v", err)
		} else if first, dup := seen[a.ID]; dup {
			c.fail(c.loc().find("agents", i, "id"), "agent id %q is defined twice (first at line %d): ids must be unique", a.ID, c.loc().find("agents", first, "id"))
		} else {
			seen[a.ID] = i
		}
		c.agent(i, a)
	}
}

// agent checks the values of agent entry i.
func (c *configCheck) agent(i int, a Agent) {
	switch a.Type {
	case AgentAI, AgentHuman:
	default:
		c.fail(c.loc().find("agents", i, "type"), "agent %q: type %q is invalid: use \"ai\" or \"human\"", a.ID, a.Type)
	}
	switch a.Role {
	case "", RoleWorker, RoleManager:
	default:
		c.fail(c.loc().find("agents", i, "role"), "agent %q: role %q is invalid: use \"worker\" or \"manager\"", a.ID, a.Role)
	}
	if a.Type == AgentHuman && len(a.Command) > 0 {
		c.fail(c.loc().find("agents", i, "command"), "agent %q is a human and cannot have a command: remove it", a.ID)
	}
}

// parents checks that every parent is another configured agent.
func (c *configCheck) parents(agents []Agent) {
	ids := map[string]bool{}
	for _, a := range agents {
		ids[a.ID] = true
	}
	for i, a := range agents {
		switch {
		case a.Parent == "":
		case a.Parent == a.ID:
			c.fail(c.loc().find("agents", i, "parent"), "agent %q cannot be its own parent", a.ID)
		case !ids[a.Parent]:
			c.fail(c.loc().find("agents", i, "parent"), "agent %q: parent %q is not a configured agent: add it or fix the id", a.ID, a.Parent)
		}
	}
}

func (c *Config) applyDefaults() {
	d, def := &c.Defaults, DefaultDefaults
	if d.Durability == "" {
		d.Durability = def.Durability
	}
	for _, p := range []struct{ v, def *Duration }{
		{&d.SessionIdleTimeout, &def.SessionIdleTimeout},
		{&d.ChatIdleTimeout, &def.ChatIdleTimeout},
		{&d.ConversationPendingTimeout, &def.ConversationPendingTimeout},
		{&d.ConversationActiveTimeout, &def.ConversationActiveTimeout},
		{&d.SpawnCooldown, &def.SpawnCooldown},
		{&d.TriggerTTL, &def.TriggerTTL},
		{&d.AuthenticateWithin, &def.AuthenticateWithin},
		{&d.UnsurfacedAfter, &def.UnsurfacedAfter},
		{&d.LeaseTTL, &def.LeaseTTL},
		{&d.LeaseMaxTTL, &def.LeaseMaxTTL},
	} {
		if p.v.Duration == 0 {
			*p.v = *p.def
		}
	}
	if d.WaitSeconds == 0 {
		d.WaitSeconds = def.WaitSeconds
	}
	if d.MaxConcurrent == 0 {
		d.MaxConcurrent = def.MaxConcurrent
	}
	for i := range c.Agents {
		if c.Agents[i].Role == "" {
			c.Agents[i].Role = RoleWorker
		}
	}
}

// A Locator maps TOML keys to line numbers, because the TOML decoder
// reports positions only for syntax errors. It understands [table],
// [[array]] and key = value lines, which is all config.toml uses.
type Locator struct {
	keys     map[string]int // "section\x00index\x00key" -> line
	sections map[string]int // "section\x00index" -> header line
}

// The line shapes of config.toml a Locator (and an edit of the config by
// line, fsstore's) tells apart, compiled once.
var (
	// TableHeader matches a [table] header; its group is the table's name.
	TableHeader = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*\[\s*([A-Za-z0-9_.-]+)\s*\]`) })
	// ArrayHeader matches an [[array]] header; its group is the array's name.
	ArrayHeader = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*\[\[\s*([A-Za-z0-9_.-]+)\s*\]\]`) })
	// KeyLine matches a key = value line; its group is the key.
	KeyLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*"?([A-Za-z0-9_-]+)"?\s*=`) })
)

// NewLocator reads the lines of the config data.
func NewLocator(data []byte) *Locator {
	l := &Locator{keys: map[string]int{}, sections: map[string]int{}}
	count := map[string]int{}
	section, index := "", -1
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		if m := ArrayHeader().FindStringSubmatch(line); m != nil {
			section, index = m[1], count[m[1]]
			count[m[1]]++
			l.sections[section+"\x00"+strconv.Itoa(index)] = n
			continue
		}
		if m := TableHeader().FindStringSubmatch(line); m != nil {
			section, index = m[1], -1
			l.sections[section+"\x00-1"] = n
			continue
		}
		if m := KeyLine().FindStringSubmatch(line); m != nil {
			k := section + "\x00" + strconv.Itoa(index) + "\x00" + m[1]
			if _, seen := l.keys[k]; !seen {
				l.keys[k] = n
			}
			// index -1 of an array section finds a key in any entry
			if anyEntry := section + "\x00-1\x00" + m[1]; index >= 0 {
				if _, seen := l.keys[anyEntry]; !seen {
					l.keys[anyEntry] = n
				}
			}
		}
	}
	return l
}

// has says whether the config sets key in section (entry index).
func (l *Locator) has(section string, index int, key string) bool {
	_, ok := l.keys[section+"\x00"+strconv.Itoa(index)+"\x00"+key]
	return ok
}

// find returns the line of key in section (entry index of an array of
// tables, or -1), falling back to the section header, then to line 1.
func (l *Locator) find(section string, index int, key string) int {
	if n, ok := l.keys[section+"\x00"+strconv.Itoa(index)+"\x00"+key]; ok {
		return n
	}
	// key is a table of its own: [section.key] or [[section.key]]
	table := strings.TrimPrefix(section+"."+key, ".")
	if n, ok := l.sections[table+"\x00-1"]; ok {
		return n
	}
	if n, ok := l.sections[table+"\x000"]; ok {
		return n
	}
	return l.Section(section, index)
}

// Section returns the header line of section (entry index of an array of
// tables, or -1), falling back to its first entry, then to line 1.
func (l *Locator) Section(section string, index int) int {
	if n, ok := l.sections[section+"\x00"+strconv.Itoa(index)]; ok {
		return n
	}
	if n, ok := l.sections[section+"\x000"]; ok {
		return n
	}
	return 1
}

// Humans are the project's humans (only the managers, if managers).
func (c *Config) Humans(managers bool) []string {
	var out []string
	for _, a := range c.Agents {
		if a.Type == AgentHuman && (!managers || a.Role == RoleManager) {
			out = append(out, a.ID)
		}
	}
	return out
}

// IsApprover reports whether id is one of the config's approvers: a human
// with the role manager.
func (c *Config) IsApprover(id string) bool {
	a, ok := c.Agent(id)
	return ok && a.Type == AgentHuman && a.Role == RoleManager
}

// Ancestors returns agent's parent chain in the config, nearest first.
func (c *Config) Ancestors(agent string) []string {
	var out []string
	for a, ok := c.Agent(agent); ok && a.Parent != ""; a, ok = c.Agent(a.Parent) {
		if slices.Contains(out, a.Parent) || a.Parent == agent {
			break // a loop the config check missed
		}
		out = append(out, a.Parent)
	}
	return out
}

// HumanAncestors are the humans in agent's parent chain, nearest first.
func (c *Config) HumanAncestors(agent string) []string {
	var out []string
	for _, id := range c.Ancestors(agent) {
		if a, _ := c.Agent(id); a.Type == AgentHuman {
			out = append(out, id)
		}
	}
	return out
}

// TellWhom is who is told what happens to agent when nobody asked for it
// (a trigger nobody took, a run of its that failed, tool calls its client
// refused, a task it ended that has no requester to tell): its parent if that is a human, else
// every human of the project.
func (c *Config) TellWhom(agent string) []string {
	if a, ok := c.Agent(agent); ok && a.Parent != "" {
		if p, ok := c.Agent(a.Parent); ok && p.Type == AgentHuman {
			return []string{p.ID}
		}
	}
	return c.Humans(false)
}

// IsHuman says whether id is a human of the project.
func (c *Config) IsHuman(id string) bool {
	a, ok := c.Agent(id)
	return ok && a.Type == AgentHuman
}

// CheckAgentRef checks id, named what in the error, as a reference to an
// agent of cfg; "" refers to none and passes.
func CheckAgentRef(cfg *Config, id, what string) error {
	if id == "" {
		return nil
	}
	if err := CheckAgentID(id); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if _, ok := cfg.Agent(id); !ok {
		return Kindf(ErrNotFound, "%s %q is not an agent of this project: see aipm agent list", what, id)
	}
	return nil
}

// Actor resolves who a CLI action is credited to: given (the --as flag,
// else $AIPM_AS) must be an agent of the project; without it, the
// project's only human. There is no anonymous actor.
func (c *Config) Actor(given string) (string, error) {
	if given != "" {
		if err := CheckAgentRef(c, given, "--as"); err != nil {
			return "", err
		}
		return given, nil
	}
	var humans []string
	for _, a := range c.Agents {
		if a.Type == AgentHuman {
			humans = append(humans, a.ID)
		}
	}
	switch len(humans) {
	case 1:
		return humans[0], nil
	case 0:
		return "", Kindf(ErrNotFound, "this project has no human to credit the change to: add yourself with aipm agent add ID --type human")
	}
	return "", Kindf(ErrAmbiguous, "this project has %d humans (%s): say who you are with --as ID or AIPM_AS=ID", len(humans), strings.Join(humans, ", "))
}
