package launch

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"aipm/fsstore"
	"aipm/internal/clientconfig"
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

// rootRefusesFull says whether Claude Code refuses bypassPermissions
// (--access full) to a process with getenv's environment: Claude Code
// 2.1.332 exits 1 with "--dangerously-skip-permissions cannot be used
// with root/sudo privileges for security reasons" when its uid is 0,
// unless IS_SANDBOX=1 or CLAUDE_CODE_BUBBLEWRAP says it runs in a
// sandbox made for it.
func rootRefusesFull(root bool, getenv func(string) string) bool {
	return root && getenv("IS_SANDBOX") != "1" && getenv("CLAUDE_CODE_BUBBLEWRAP") == ""
}

// RootProblem is the one sentence for agent's client that will refuse to
// start as root, with the fix ("" when it will start): Claude Code with
// --access full. getenv is the environment the client gets.
func RootProblem(spec Spec, agent string, root bool, getenv func(string) string) string {
	if spec.Client != "claude" || spec.Access != AccessFull || !rootRefusesFull(root, getenv) {
		return ""
	}
	return fmt.Sprintf("Claude Code refuses --access full (its --dangerously-skip-permissions) to root, so aipm does not start %s's claude as root: "+
		"run aipm agent set %s --access project, or run aipm watch as a user other than root; in a throw-away container, "+
		`env = { IS_SANDBOX = "1" } in %s's [[agents]] entry of .ai-pm/config.toml lets Claude Code start as root`, agent, agent, agent)
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
	var sandboxed, missing []string
	for _, l := range agents {
		if msg := RootProblem(l.spec, l.a.ID, h.Root, l.env); msg != "" {
			rep.Problems = append(rep.Problems, fsstore.Problem{Path: config, Reason: "agent " + l.a.ID + ": " + msg})
		}
		if l.spec.Client != "claude" || l.spec.Access != AccessProject || runtime.GOOS != "linux" {
			continue
		}
		if m := sandboxMissing(l.env("PATH")); len(m) > 0 {
			sandboxed = append(sandboxed, l.a.ID)
			missing = m
		}
	}
	if len(sandboxed) == 0 {
		return
	}
	are := strings.Join(missing, " and ") + " are"
	if len(missing) == 1 {
		are = missing[0] + " is"
	}
	rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: Claude Code's Bash sandbox (--access project) needs bubblewrap and socat on Linux, and %s not on PATH, "+
		"so Claude Code turns the sandbox off and runs its commands without it (only its permission checks hold them, and nothing keeps them off the network): "+
		"install them (apt install bubblewrap socat, or dnf install bubblewrap socat)", agentsNamed(sandboxed), are))
}

// versionChecks runs each client's --version once, on wg.
func (rep *ClientReport) versionChecks(ctx context.Context, wg *sync.WaitGroup, mu *sync.Mutex, agents []launched) {
	checked := map[string]bool{}
	for _, l := range agents {
		c := launchClients[l.spec.Client]
		program := shell.LookPath(l.env("PATH"), c.program)
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
		t := target{l.spec.Client, clientconfig.ModelEndpoint(l.spec.Client, l.env, l.spec.Extra)}
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

// sandboxMissing are the programs of Claude Code's Linux sandbox that are
// not on path.
func sandboxMissing(path string) []string {
	var missing []string
	for _, p := range []string{"bwrap", "socat"} {
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
func Tested(client string) string { return launchClients[client].tested }

// versionRE finds a version number in a client's --version line
// ("2.1.332 (Claude Code)", "codex-cli 0.171.0").
var versionRE = regexp.MustCompile(`\d+\.\d+\.\d+`)

// clientVersion runs program --version: the line saying which version
// was checked, and a warning when it is older than c.tested or cannot be
// told.
func clientVersion(ctx context.Context, c launchClient, program string) (line, warning string) {
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
		return fmt.Sprintf("%s: version unknown (tested: %s)", c.program, c.tested),
			fmt.Sprintf("aipm cannot tell which %s this is (%s --version: %s): aipm was tested with %s %s", c.program, program, why, c.program, c.tested)
	}
	line = fmt.Sprintf("%s %s (tested: %s)", c.program, got, c.tested)
	if older(got, c.tested) {
		warning = fmt.Sprintf("%s %s is older than %s, the version aipm was tested with, and may not do what aipm asks of it: update it (npm install -g %s@%s)", c.program, got, c.tested, c.pkg, c.tested)
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
