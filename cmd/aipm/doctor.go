package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"aipm/fsstore"
	allClients "aipm/internal/clients"
	"aipm/internal/gitstaged"
	"aipm/internal/launch"
)

type doctorOptions struct {
	e      *env
	Repair bool
	JSON   bool
}

func newCmdDoctor(e *env, runF func(*doctorOptions) error) *cobra.Command {
	o := &doctorOptions{e: e}
	c := &cobra.Command{
		Use:   "doctor [--repair]",
		Short: "Check every file of .ai-pm/; --repair quarantines torn and invalid lines",
		Long: `Check every file of the project's .ai-pm/ directory and print each problem as
path:line: what is wrong, and what to do. Exit 1 while problems are left; the
last line says how many of them --repair repairs (--json: "repairable").

--repair moves torn and invalid JSONL lines to .ai-pm/quarantine/ (valid lines
are kept byte for byte), removes stale temporary files, restores the missing
copy of a message, indexes a session missing from its agent's index, and
tells the holder of a lease broken half-way. Damaged JSON documents and
config errors are only reported: only a person knows what they should say. A .ai-pm/ on a network filesystem (NFS, SMB/CIFS, FUSE, 9p, ...),
which every other command refuses, is reported, and --repair then repairs
nothing. An AI agent without a passkey (a clone of the project: passkeys
are not kept in git) is reported with the command that issues one, and so
is an agent aipm watch cannot start: a command but no saved passkey, a
client (aipm agent add --client) that is not on PATH, a Codex without aipm's
hooks, Claude Code with --access full as root (it refuses to start).

For each client the agents run, doctor runs its --version once and says
which version it checked against the one aipm was tested with. It warns on
stderr, without failing, of what may keep a started agent from working: a
client older than the version tested, a model endpoint that is unset or
cannot be reached (a TCP connection to its host, at most 2 s), no
credential for it (Claude Code: ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY,
ANTHROPIC_AUTH_TOKEN, CLAUDE_CODE_OAUTH_TOKEN or its login; Codex: the
model provider of its config.toml, openai_base_url, and CODEX_API_KEY or its
login), in the environment doctor runs with and the agent's own env entries,
and bubblewrap or socat missing on Linux, which Claude Code's Bash sandbox
(--access project) needs.

When the project holds aipm's entries for a client that will ignore them,
doctor warns on stderr, with the fix; a warning does not make doctor fail.
Claude Code (aipm's server in .mcp.json or its tools allowed in
.claude/settings.json): the user's ~/.claude.json ($CLAUDE_CONFIG_DIR/
.claude.json when set) has no accepted trust dialog for the project, so
claude -p refuses every aipm tool (run claude once there and accept it, or
pass --allowedTools mcp__aipm). Codex (the [mcp_servers.aipm] table in
.codex/config.toml or aipm's hooks in .codex/hooks.json): the user's Codex
config ($CODEX_HOME/config.toml, default ~/.codex/config.toml) does not
trust the project, so Codex ignores them, or does not trust aipm's hooks,
which it skips silently (open codex in the project and trust them with
/hooks). A missing file trusts nothing; one that cannot be read is said.
Once aipm leases install-hook guarded the project's git commits, it warns of
each pre-commit hook git would now run without aipm's line (missing, not
executable, or another after core.hooksPath was set), for the project's work
tree, its linked worktrees and its submodules.`,
		Example: "  aipm doctor\n  aipm doctor --repair\n  aipm doctor --json",
		Args:    argsNone,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(o)
			}
			return doctorRun(cmd, o)
		},
	}
	c.Flags().BoolVar(&o.Repair, "repair", false, "move torn and invalid lines to quarantine/ and remove stale temp files")
	c.Flags().BoolVar(&o.JSON, "json", false, "print the problems as a JSON array")
	return c
}

// doctorProblem is one problem in doctor --json.
type doctorProblem struct {
	Path       string `json:"path"`
	Line       int    `json:"line,omitempty"`
	Reason     string `json:"reason"`
	Repaired   bool   `json:"repaired"`
	Repairable bool   `json:"repairable"`
}

func doctorRun(cmd *cobra.Command, o *doctorOptions) error {
	store, cfg, err := o.e.openBy(fsstore.OpenToCheck)
	if store == nil {
		return err
	}
	// A config error is one of the problems doctor reports, not a reason to stop.
	problems, err := store.Doctor(cmd.Context(), o.Repair)
	problems = append(problems, launch.StartProblems(o.e.getenv("PATH"), store, cfg)...)
	clients := launch.CheckClients(cmd.Context(), o.e.host(), store, cfg)
	problems = append(problems, clients.Problems...)
	fsstore.SortProblems(problems)
	unrepaired, repairable := 0, 0
	list := []doctorProblem{}
	for _, p := range problems {
		list = append(list, doctorProblem{Path: p.Path, Line: p.Line, Reason: p.Reason, Repaired: p.Repaired, Repairable: p.Repairable})
		if !p.Repaired {
			unrepaired++
			if p.Repairable {
				repairable++
			}
		}
		if o.JSON {
			continue
		}
		if p.Repaired {
			fmt.Fprintf(o.e.stdout, "repaired: %s\n", p)
		} else {
			fmt.Fprintln(o.e.stdout, p)
		}
	}
	if o.JSON {
		if err := writeJSON(o.e.stdout, list); err != nil {
			return err
		}
	}
	for _, name := range allClients.Names() {
		warn(o.e, mustClient(name).Trust(o.e.getenv, store.ProjectDir()))
	}
	for _, w := range clients.Warnings {
		warn(o.e, w)
	}
	warnFailedRuns(o.e, store)
	guard, _ := gitstaged.GuardProblems(cmd.Context(), store.ProjectDir()) // no git, no guard
	for _, w := range guard {
		warn(o.e, w)
	}
	if err != nil {
		return err
	}
	switch {
	case unrepaired > 0:
		return failed("%s left: %s", plural(unrepaired, "problem"), doctorHint(store, o.Repair, unrepaired, repairable))
	case o.JSON:
	case len(problems) == 0:
		printAgentAccess(o.e.stdout, cfg)
		for _, v := range clients.Versions {
			fmt.Fprintln(o.e.stdout, v)
		}
		fmt.Fprintln(o.e.stdout, "no problems found")
	default:
		fmt.Fprintf(o.e.stdout, "repaired %s\n", plural(len(problems), "problem"))
	}
	return nil
}

// warnFailedRuns warns of each agent's last run that failed (aipm status
// shows the same): a problem of the last run, not of the files, so it
// does not make doctor fail.
func warnFailedRuns(e *env, store *fsstore.Store) {
	outcomes, _ := store.Runs().Outcomes()
	for _, o := range outcomes {
		if o.Failed() {
			warn(e, fmt.Sprintf("a last run, ended %s: %s", e.age(o.EndedAt), o.Problem))
		}
	}
}

// doctorHint is what doctor's last line says to do about the problems
// left: aipm doctor --repair only when some of them are ones it repairs.
func doctorHint(store *fsstore.Store, repaired bool, left, repairable int) string {
	switch one := left == 1; {
	case store.OnNetworkFilesystem() != "":
		return "move the project to a local disk first (doctor repairs nothing on a network filesystem), then run aipm doctor again"
	case repaired || repairable == 0:
		return map[bool]string{true: "fix it as its line says", false: "fix them as each line says"}[one]
	case repairable == left:
		return "run aipm doctor --repair, which repairs " + map[bool]string{true: "it", false: "them"}[one]
	}
	return fmt.Sprintf("run aipm doctor --repair, which repairs %d of them; fix the rest as each line says", repairable)
}

// printAgentAccess says, for each agent aipm watch starts as a real client,
// what it may do (doctor's closing lines, as agent list's STARTS column).
func printAgentAccess(w io.Writer, cfg *fsstore.Config) {
	if cfg == nil {
		return
	}
	for _, a := range cfg.Agents {
		if starts, may := launch.Starts(a); may != "" {
			fmt.Fprintf(w, "agent %s: aipm watch starts %s; it may %s\n", a.ID, starts, may)
		}
	}
}
