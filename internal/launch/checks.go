package launch

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"aipm/fsstore"
	"aipm/internal/clientconfig"
	"aipm/internal/clients"
	"aipm/internal/shell"
)

// Host is the machine aipm watch starts the agents on, as aipm doctor or
// agent add sees it: the environment aipm watch runs with (an agent's own
// env entries are laid over it) and whether it runs as root.
type Host struct {
	Getenv func(string) string
	Root   bool
}

// agentEnv is the environment a's client gets: h's, with a's env entries
// over it.
func (h Host) agentEnv(a fsstore.Agent) func(string) string {
	return func(k string) string {
		if v, ok := a.Env[k]; ok {
			return v
		}
		return h.Getenv(k)
	}
}

// RootProblem is the one sentence for agent's client that will refuse to
// start as root, with the fix ("" when it will start): Claude Code with
// --access full. getenv is the environment the client gets.
func RootProblem(spec Spec, agent string, root bool, getenv func(string) string) string {
	c, _ := clients.Get(spec.Client)
	if c.RootProblem == nil {
		return ""
	}
	return c.RootProblem(spec.Access, agent, root, getenv)
}

// WarnRoot says, on w, when a's client will refuse to start because aipm
// watch runs as root (h.Root: the user of this command).
func WarnRoot(w io.Writer, h Host, a fsstore.Agent) {
	spec, ok, err := SpecOf(a.Command)
	if !ok || err != nil {
		return
	}
	if msg := RootProblem(spec, a.ID, h.Root, h.agentEnv(a)); msg != "" {
		fmt.Fprintf(w, "aipm: warning: agent %s: %s\n", a.ID, msg)
	}
}

// ClientReport is what aipm doctor says of the clients its launched
// agents run. Problems keep an agent from starting; warnings may keep it
// from working, or from doing all it is asked (aipm doctor still passes).
type ClientReport struct {
	Problems []fsstore.Problem
	Warnings []string
	// Versions says, one line per client, which version was checked
	// against the one aipm was tested with.
	Versions []string
}

// Timeouts of aipm doctor's looks at the clients, all taken at once.
const (
	versionTimeout = 5 * time.Second // claude --version, codex --version
	dialTimeout    = 2 * time.Second // a TCP connection to a model endpoint
)

// CheckClients looks at what the agents aipm watch starts as real
// clients need from the machine: Claude Code with --access full as root
// (a problem: it will not start); and warnings: Claude Code's Bash
// sandbox (--access project) without bubblewrap or socat on Linux, a
// client older than the version aipm was tested with (each client's
// --version, run once), a model endpoint that is unset or cannot be
// reached (a TCP connection to its host and port), a client without a
// credential for it.
func CheckClients(ctx context.Context, h Host, store *fsstore.Store, cfg *fsstore.Config) ClientReport {
	var rep ClientReport
	if cfg == nil {
		return rep
	}
	var agents []launched
	for _, a := range cfg.Agents {
		if spec, ok, err := SpecOf(a.Command); a.Type == fsstore.AgentAI && ok && err == nil {
			agents = append(agents, launched{a, spec, h.agentEnv(a)})
		}
	}
	rep.startChecks(h, store.Rel(store.ConfigPath()), agents)
	// The clients' versions and endpoints, all looked at at once.
	var wg sync.WaitGroup
	var mu sync.Mutex
	rep.versionChecks(ctx, &wg, &mu, agents)
	rep.endpointChecks(ctx, &wg, &mu, agents)
	wg.Wait()
	slices.Sort(rep.Versions)
	slices.Sort(rep.Warnings)
	return rep
}

// launched is an agent aipm watch starts as a real client, with its spec
// and the environment its client gets.
type launched struct {
	a    fsstore.Agent
	spec Spec
	env  func(string) string
}

// startChecks: Claude Code with --access full as root (a problem), and
// its Bash sandbox without bubblewrap or socat on Linux (Claude Code
// 2.1.332 then says "Sandbox disabled" and runs commands unsandboxed).
func (rep *ClientReport) startChecks(h Host, config string, agents []launched) {
	type short struct {
		agents, missing []string
		warning         func(agents string, missing []string) string
	}
	sandboxed := map[string]short{}
	var keys []string
	for _, l := range agents {
		if msg := RootProblem(l.spec, l.a.ID, h.Root, l.env); msg != "" {
			rep.Problems = append(rep.Problems, fsstore.Problem{Path: config, Reason: "agent " + l.a.ID + ": " + msg})
		}
		c, _ := clients.Get(l.spec.Client)
		if c.Sandbox == nil {
			continue
		}
		programs, warning := c.Sandbox(l.spec.Access)
		if m := missingPrograms(l.env("PATH"), programs); len(m) > 0 {
			key := c.Name + "\x00" + l.spec.Access
			if _, ok := sandboxed[key]; !ok {
				keys = append(keys, key)
			}
			s := sandboxed[key]
			s.agents, s.missing, s.warning = append(s.agents, l.a.ID), m, warning
			sandboxed[key] = s
		}
	}
	for _, k := range keys {
		s := sandboxed[k]
		rep.Warnings = append(rep.Warnings, s.warning(agentsNamed(s.agents), s.missing))
	}
}

// versionChecks runs each client's --version once, on wg.
func (rep *ClientReport) versionChecks(ctx context.Context, wg *sync.WaitGroup, mu *sync.Mutex, agents []launched) {
	checked := map[string]bool{}
	for _, l := range agents {
		c, _ := clients.Get(l.spec.Client)
		program := shell.LookPath(l.env("PATH"), c.Program)
		if program == "" || checked[program] {
			continue // not there: StartProblems says so
		}
		checked[program] = true
		wg.Add(1)
		go func() {
			defer wg.Done()
			line, warning := clientVersion(ctx, c, program)
			mu.Lock()
			defer mu.Unlock()
			rep.Versions = append(rep.Versions, line)
			if warning != "" {
				rep.Warnings = append(rep.Warnings, warning)
			}
		}()
	}
}

// endpointChecks looks at each client's model endpoint and credential,
// and dials each endpoint once, on wg.
func (rep *ClientReport) endpointChecks(ctx context.Context, wg *sync.WaitGroup, mu *sync.Mutex, agents []launched) {
	type target struct {
		client string
		ep     clientconfig.Endpoint
	}
	users := map[target][]string{}
	var targets []target
	for _, l := range agents {
		t := target{l.spec.Client, endpointOf(l)}
		if users[t] == nil {
			targets = append(targets, t)
		}
		users[t] = append(users[t], l.a.ID)
	}
	for _, t := range targets {
		who := agentsNamed(users[t]) + ": " + t.client
		switch {
		case t.ep.Unknown != "":
			continue // aipm cannot tell
		case t.ep.URL == "":
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s has no model endpoint: %s, so it cannot start: set it there", who, t.ep.From))
			continue
		case t.ep.Credential == "" && t.ep.NoCredential != "":
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s has no credential for its model endpoint %s: %s", who, t.ep.URL, t.ep.NoCredential))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := dial(ctx, t.ep.URL); err != nil {
				mu.Lock()
				defer mu.Unlock()
				rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s's model endpoint %s (%s) cannot be reached (%v): check the network, or point it at one it reaches", who, t.ep.URL, t.ep.From, err))
			}
		}()
	}
}

// missingPrograms are the programs that are not on path.
func missingPrograms(path string, programs []string) []string {
	var missing []string
	for _, p := range programs {
		if shell.LookPath(path, p) == "" {
			missing = append(missing, p)
		}
	}
	return missing
}

// agentsNamed is "agent coder" or "agents coder, reviewer".
func agentsNamed(ids []string) string {
	if len(ids) == 1 {
		return "agent " + ids[0]
	}
	return "agents " + strings.Join(ids, ", ")
}

// Tested is the version of client aipm's end-to-end tests drive ("" for
// a client aipm does not launch).
func Tested(client string) string {
	c, _ := clients.Get(client)
	return c.Tested
}

// endpointOf is the model endpoint of l's client.
func endpointOf(l launched) clientconfig.Endpoint {
	c, _ := clients.Get(l.spec.Client)
	return c.Endpoint(l.env, l.spec.Extra)
}

// versionRE finds a version number in a client's --version line
// ("2.1.332 (Claude Code)", "codex-cli 0.171.0").
var versionRE = regexp.MustCompile(`\d+\.\d+\.\d+`)

// clientVersion runs program --version: the line saying which version
// was checked, and a warning when it is older than c.Tested or cannot be
// told.
func clientVersion(ctx context.Context, c clients.Client, program string) (line, warning string) {
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, program, "--version")
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	got := versionRE.FindString(string(out))
	if err != nil || got == "" {
		why := "it printed no version"
		if err != nil {
			why = err.Error()
		}
		return fmt.Sprintf("%s: version unknown (tested: %s)", c.Program, c.Tested),
			fmt.Sprintf("aipm cannot tell which %s this is (%s --version: %s): aipm was tested with %s %s", c.Program, program, why, c.Program, c.Tested)
	}
	line = fmt.Sprintf("%s %s (tested: %s)", c.Program, got, c.Tested)
	if older(got, c.Tested) {
		warning = fmt.Sprintf("%s %s is older than %s, the version aipm was tested with, and may not do what aipm asks of it: update it (npm install -g %s@%s)", c.Program, got, c.Tested, c.Package, c.Tested)
	}
	return line, warning
}

// older says whether version a is older than b (both N.N.N).
func older(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range pa {
		x, _ := strconv.Atoi(pa[i])
		y, _ := strconv.Atoi(pb[i])
		if x != y {
			return x < y
		}
	}
	return false
}

// dial opens a TCP connection to the host and port of base (a URL) and
// closes it: whether the model endpoint can be reached at all.
func dial(ctx context.Context, base string) error {
	u, err := url.Parse(base)
	if err != nil || u.Hostname() == "" {
		return fmt.Errorf("%q is not a URL", base)
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "ws": "80"}[u.Scheme]
		if port == "" {
			port = "443"
		}
	}
	d := net.Dialer{Timeout: dialTimeout}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		return err
	}
	return conn.Close()
}
