package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"aipm/fsstore"
	"aipm/internal/gitstaged"
	"aipm/internal/status"
)

// File leases (DESIGN section 18): humans take, release and break them
// here, agents through their tools; leases check is git's pre-commit guard.

type leasesOptions struct {
	e    *env
	JSON bool
}

func newCmdLeases(e *env, runF func(*leasesOptions) error) *cobra.Command {
	o := &leasesOptions{e: e}
	c := &cobra.Command{
		Use:   "leases",
		Short: "List, take, release and break file leases; check a commit against them",
		Long: `List the live file leases, oldest first: who holds which paths of the project,
exclusively or shared, until when and why. An exclusive lease keeps everyone
else from leasing an overlapping path and, with aipm hook installed, from
writing it with their client's file tools; a shared one only from holding it
exclusively. A lease ends when it expires, when its holder releases it, when a
human breaks it, or with the agent's session that took it.

PATHs are relative to the project directory, whatever the working directory:
a file, a directory (everything under it; DIR/** is taken as DIR) or a glob
with * and ? (within one directory). A lease binds the file, not its
spelling: a path is taken through its symbolic links (a lease stores where
they lead, and one leading out of the project is refused), a hard link of a
leased file is the leased file, names compare in Unicode NFC, and their case
folds where the project's file system is case-insensitive.`,
		Example: `  aipm leases
  aipm leases take src/parser --reason "rewriting the parser" --ttl 2h
  aipm leases release src/parser
  aipm leases break src/parser --reason "coder is gone"
  aipm leases install-hook`,
		Args: noUnknownSubcommand,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(o)
			}
			return leasesRun(o)
		},
	}
	c.Flags().BoolVar(&o.JSON, "json", false, "print the leases as a JSON array")
	c.AddCommand(newCmdLeasesTake(e, nil), newCmdLeasesRelease(e, nil), newCmdLeasesBreak(e, nil),
		newCmdLeasesCheck(e, nil), newCmdLeasesInstallHook(e, nil))
	return c
}

func leasesRun(o *leasesOptions) error {
	store, err := o.e.openStore()
	if err != nil {
		return err
	}
	leases, err := store.Leases()
	switch {
	case err != nil:
		return fmt.Errorf("leases: %w", err)
	case o.JSON:
		return writeJSON(o.e.stdout, leases)
	case len(leases) == 0:
		_, err := fmt.Fprintln(o.e.stdout, "no leases: take one with aipm leases take PATH")
		return err
	}
	return status.LeaseTable(leases).Print(o.e.stdout, o.e.colour, o.e.width)
}

type leasesTakeOptions struct {
	e      *env
	Paths  []string
	Shared bool
	TTL    time.Duration
	Reason string
	Task   string
	As     string
	JSON   bool
}

func newCmdLeasesTake(e *env, runF func(*leasesTakeOptions) error) *cobra.Command {
	o := &leasesTakeOptions{e: e}
	c := &cobra.Command{
		Use:   "take PATH... [--shared] [--ttl D] [--reason R]",
		Short: "Lease paths for a human, exclusively unless --shared",
		Long: `Lease PATHs for a human (--as, $AIPM_AS, or the project's only human) until
--ttl (default lease_ttl of config.toml's [defaults], at most lease_max_ttl).
A path another holds in a way that conflicts is refused with who holds it,
why and until when, and nothing is taken. Taking the same paths again renews
the lease: it replaces the one it names every path of.`,
		Example: `  aipm leases take src/parser --reason "rewriting the parser"
  aipm leases take 'docs/*.md' --shared --ttl 30m
  aipm leases take src/parser --task 01KAQ7`,
		Args: leasePaths,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Paths = args
			if runF != nil {
				return runF(o)
			}
			return leasesTakeRun(cmd, o)
		},
	}
	c.Flags().BoolVar(&o.Shared, "shared", false, "share the paths with other shared holders instead of holding them alone")
	c.Flags().DurationVar(&o.TTL, "ttl", 0, "how long the lease lasts (default lease_ttl)")
	c.Flags().StringVar(&o.Reason, "reason", "", fmt.Sprintf("why, shown to whoever it keeps out (at most %d bytes)", fsstore.MaxLeaseReason))
	c.Flags().StringVar(&o.Task, "task", "", "the task it is for (aipm task show and get_task list it)")
	c.Flags().StringVar(&o.As, "as", "", "the human taking it (default $AIPM_AS, else the only human)")
	c.Flags().BoolVar(&o.JSON, "json", false, "print the lease as JSON")
	c.RegisterFlagCompletionFunc("as", e.completeAgents(-1, fsstore.AgentHuman))
	return c
}

// leasePaths needs at least one PATH.
func leasePaths(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return usageError("%s needs at least one path relative to the project: %s", cmd.CommandPath(), cmd.UseLine())
	}
	return nil
}

func leasesTakeRun(cmd *cobra.Command, o *leasesTakeOptions) error {
	store, cfg, err := o.e.open()
	if err != nil {
		return err
	}
	by, err := o.e.human(cfg, o.As, "AI agents lease paths through their own tools")
	if err != nil {
		return err
	}
	var task string
	if o.Task != "" {
		if task, err = taskID(store, o.Task); err != nil {
			return err
		}
	}
	l, err := store.TakeLease(cmd.Context(), cfg, fsstore.LeaseRequest{Holder: by, Paths: o.Paths, Shared: o.Shared, Reason: o.Reason, TaskID: task, TTL: o.TTL})
	if err != nil {
		return err
	}
	if o.JSON {
		return writeJSON(o.e.stdout, l)
	}
	_, err = fmt.Fprintf(o.e.stdout, "leased %s to %s until %s\n", strings.Join(l.Paths, ", "), l.Holder, o.e.timeText(l.ExpiresAt))
	return err
}

type leasesEndOptions struct {
	e      *env
	Break  bool // break (anyone's, with a reason) rather than release (one's own)
	Paths  []string
	Reason string
	As     string
	JSON   bool
}

func newCmdLeasesRelease(e *env, runF func(*leasesEndOptions) error) *cobra.Command {
	o := &leasesEndOptions{e: e}
	c := &cobra.Command{
		Use:   "release [PATH...]",
		Short: "End a human's own leases on paths, or all of them",
		Long: `End the leases of a human (--as, $AIPM_AS, or the project's only human) that
have a path overlapping one of PATHs; with none, every lease the human holds.`,
		Example: "  aipm leases release src/parser\n  aipm leases release --as ops",
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Paths = args
			if runF != nil {
				return runF(o)
			}
			return leasesEndRun(cmd, o)
		},
	}
	c.Flags().StringVar(&o.As, "as", "", "the human releasing (default $AIPM_AS, else the only human)")
	c.Flags().BoolVar(&o.JSON, "json", false, "print the ended leases as a JSON array")
	c.RegisterFlagCompletionFunc("as", e.completeAgents(-1, fsstore.AgentHuman))
	return c
}

func newCmdLeasesBreak(e *env, runF func(*leasesEndOptions) error) *cobra.Command {
	o := &leasesEndOptions{e: e, Break: true}
	c := &cobra.Command{
		Use:   "break PATH... --reason R",
		Short: "End anyone's leases on paths, telling each holder why (a human)",
		Long: `End every lease, whoever holds it, that has a path overlapping one of PATHs: a
human's decision (--as, $AIPM_AS, or the project's only human). Each holder
is told in a notification who broke it and --reason.`,
		Example: `  aipm leases break src/parser --reason "coder is stuck; I am taking over"`,
		Args:    leasePaths,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Paths = args
			if strings.TrimSpace(o.Reason) == "" {
				return usageError("leases break needs --reason: its holders are told why")
			}
			if runF != nil {
				return runF(o)
			}
			return leasesEndRun(cmd, o)
		},
	}
	c.Flags().StringVar(&o.Reason, "reason", "", "why, told to each holder")
	c.Flags().StringVar(&o.As, "as", "", "the human breaking them (default $AIPM_AS, else the only human)")
	c.Flags().BoolVar(&o.JSON, "json", false, "print the broken leases as a JSON array")
	c.RegisterFlagCompletionFunc("as", e.completeAgents(-1, fsstore.AgentHuman))
	return c
}

// leasesEndRun releases or breaks leases.
func leasesEndRun(cmd *cobra.Command, o *leasesEndOptions) error {
	store, cfg, err := o.e.open()
	if err != nil {
		return err
	}
	why, verb := "AI agents release leases through their own tools", "released"
	if o.Break {
		why, verb = "only a human may break leases", "broke"
	}
	by, err := o.e.human(cfg, o.As, why)
	if err != nil {
		return err
	}
	var ended []fsstore.Lease
	if o.Break {
		// A holder not told (its notification failed) is warned of: the
		// leases are broken all the same.
		ended, err = store.BreakLeases(cmd.Context(), by, o.Paths, o.Reason)
		if err != nil && ended != nil {
			warn(o.e, err.Error())
			err = nil
		}
	} else {
		ended, err = store.ReleaseLeases(cmd.Context(), by, o.Paths)
	}
	if err != nil {
		return err
	}
	if o.JSON {
		return writeJSON(o.e.stdout, ended)
	}
	for _, l := range ended {
		fmt.Fprintf(o.e.stdout, "%s %s's lease on %s\n", verb, l.Holder, visible(strings.Join(l.Paths, ", ")))
	}
	return nil
}

type leasesCheckOptions struct {
	e      *env
	Staged bool
	Quiet  bool
	As     string
	JSON   bool
}

func newCmdLeasesCheck(e *env, runF func(*leasesCheckOptions) error) *cobra.Command {
	o := &leasesCheckOptions{e: e}
	c := &cobra.Command{
		Use:   "check [--staged]",
		Short: "Exit 1 when git's changes touch a path another holds exclusively",
		Long: `Check the changes of a git work tree of the project against the leases: exit 1,
naming each path and who holds it, when a changed path is under another's
exclusive lease; exit 0 when none is. The checker is proven, never named by
an id alone: an AI agent by its credential ($AIPM_AGENT_ID with its
$AIPM_PASSKEY_FILE or $AIPM_PASSKEY, as its client holds them; an id without
its passkey is refused), else the human --as or $AIPM_AS names (never an AI
agent), or the project's only human: its own leases never block it. With
none of these (a project of several humans, or none), the checker is no one,
whom every exclusive lease holds.

The work tree is the working directory's (where git runs a hook) when its
files are the project's, else the project's: a linked worktree (git worktree
add, inside the project or not) is checked as its main work tree, with the
project's own .ai-pm, and a submodule as its path in the project. --staged
checks what the next commit changes (git's index; a submodule's new commit
stands for the files it changes), for a pre-commit hook (aipm leases
install-hook); without it, everything the working tree changes from the last
commit, staged or not, and new files git does not ignore. Once install-hook
guarded the project, a work tree whose pre-commit hook no longer runs the
check (a core.hooksPath set since) is warned of, as aipm doctor does.`,
		Example: "  aipm leases check\n  aipm leases check --staged --as ops",
		Args:    argsNone,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(o)
			}
			return leasesCheckRun(cmd, o)
		},
	}
	c.Flags().BoolVar(&o.Staged, "staged", false, "check only what is staged for the next commit")
	c.Flags().BoolVarP(&o.Quiet, "quiet", "q", false, "print nothing when no lease blocks the changes")
	c.Flags().StringVar(&o.As, "as", "", "who checks, when $AIPM_AGENT_ID is unset (default $AIPM_AS, else the only human)")
	c.Flags().BoolVar(&o.JSON, "json", false, "print the conflicts as a JSON array")
	c.RegisterFlagCompletionFunc("as", e.completeAgents(-1, ""))
	return c
}

func leasesCheckRun(cmd *cobra.Command, o *leasesCheckOptions) error {
	ctx := cmd.Context()
	e, start, err := o.e.leaseHome(ctx)
	if err != nil {
		return err
	}
	store, cfg, err := e.open()
	if err != nil {
		return err
	}
	who, err := o.checker(store, cfg)
	if err != nil {
		return err
	}
	// The tree committed in: the working directory's (where git runs the
	// hook: a linked worktree, a submodule) when its files are the
	// project's, else the one --dir names.
	tree, err := gitstaged.TreeOf(ctx, ".", true)
	if err != nil || !tree.Overlaps(store.ProjectDir()) {
		tree, err = gitstaged.TreeOf(ctx, start, false)
	}
	if errors.Is(err, gitstaged.ErrNoRepository) {
		return usageError("leases check: the project is not in a git work tree: it checks git's changes")
	} else if err != nil {
		return fmt.Errorf("leases check: %w", err)
	}
	warn(o.e, gitstaged.GuardProblem(ctx, store.ProjectDir(), tree))
	changed, what := gitstaged.Changed, "the working tree changes"
	if o.Staged {
		changed, what = gitstaged.In, "the staged changes"
	}
	names, err := changed(ctx, tree, store.ProjectDir())
	if err != nil {
		return fmt.Errorf("leases check: %w", err)
	}
	blocked, err := store.LeaseCheck(who, names)
	if err != nil {
		return fmt.Errorf("leases check: %w", err)
	}
	if o.JSON {
		if err := writeJSON(o.e.stdout, blocked); err != nil {
			return err
		}
	} else if len(blocked) == 0 && !o.Quiet {
		fmt.Fprintf(o.e.stdout, "%s %s, none under another's exclusive lease\n", what, plural(len(names), "path"))
	}
	if len(blocked) == 0 {
		return nil
	}
	for _, c := range blocked {
		fmt.Fprintf(o.e.stderr, "aipm: %s\n", leaseConflictText(cfg, who, c))
	}
	return failed("%s of %s leased by another: wait, or ask the holder to release it", plural(len(blocked), "path"), what)
}

// checker is who the check is for, as far as it is proven: an AI agent by
// its credential (AIPM_AGENT_ID with AIPM_PASSKEY or AIPM_PASSKEY_FILE,
// the passkey checked), never by its id alone; without one, a human
// (--as, AIPM_AS, or the only human), who has no credential to show, or
// no one, whom every exclusive lease holds.
func (o *leasesCheckOptions) checker(store *fsstore.Store, cfg *fsstore.Config) (string, error) {
	cred, err := fsstore.CredentialFromEnv(o.e.getenv)
	switch {
	case err != nil:
		return "", usageError("leases check: %v: an AI agent's check is proven by its passkey", err)
	case cred == nil && o.As == "" && o.e.getenv("AIPM_AS") == "":
		// A commit names no one (a project of several humans, or none):
		// the only human if there is one, else no one; so a guard never
		// refuses a commit that touches no leased path.
		who, _ := o.e.actor(cfg, "")
		return who, nil
	case cred == nil:
		return o.e.human(cfg, o.As, "an AI agent is proven by its passkey (AIPM_AGENT_ID with AIPM_PASSKEY_FILE), not named")
	}
	if err := agentRef(cfg, cred.Agent, "$"+fsstore.EnvAgentID); err != nil {
		return "", err
	}
	if a, _ := cfg.Agent(cred.Agent); a.Type != fsstore.AgentAI {
		return "", usageError("$%s is %s, a human: humans have no passkey; unset %s, and the check is --as, $AIPM_AS or the only human", fsstore.EnvAgentID, cred.Agent, fsstore.EnvAgentID)
	}
	if err := store.VerifyPasskey(cred.Agent, cred.Passkey); err != nil {
		return "", failed("leases check: $%s is %s, and its passkey is not %s's (%v): the check is refused; point %s at %s's passkey file", fsstore.EnvAgentID, cred.Agent, cred.Agent, err, fsstore.EnvPasskeyFile, cred.Agent)
	}
	if o.As != "" && o.As != cred.Agent {
		return "", usageError("leases check: the environment proves %s (its passkey): --as %s cannot make it another; drop --as", cred.Agent, o.As)
	}
	return cred.Agent, nil
}

// leaseHome is e for the project a lease check or install-hook is for,
// found where it is at home in its repository (gitstaged.Tree): --dir or
// $AIPM_DIR, else the nearest .ai-pm upwards from the working directory,
// each taken at home, so that in a linked worktree or a submodule it is
// the project's own .ai-pm, not a checkout's copy of it; and start, the
// directory as given. Outside a git work tree, e as it is.
func (e *env) leaseHome(ctx context.Context) (*env, string, error) {
	start := cmp.Or(e.dir, e.getenv("AIPM_DIR"), ".")
	home, err := gitstaged.Home(ctx, start)
	if err != nil {
		return e, start, nil // not in git: found as any command finds it
	}
	if e.dir == "" && e.getenv("AIPM_DIR") == "" {
		if home, err = fsstore.FindProject(home); err != nil {
			return nil, "", asUsage(err)
		}
	}
	at := *e
	at.dir = home
	return &at, start, nil
}

// leaseConflictText is c's sentence for who: an AI agent asks the holder
// with its own tool, a human with aipm send (cliMessage).
func leaseConflictText(cfg *fsstore.Config, who string, c *fsstore.LeaseConflictError) string {
	if a, _ := cfg.Agent(who); a.Type == fsstore.AgentAI {
		return c.Error()
	}
	return cliMessage(c)
}

type leasesInstallHookOptions struct {
	e *env
}

func newCmdLeasesInstallHook(e *env, runF func(*leasesInstallHookOptions) error) *cobra.Command {
	o := &leasesInstallHookOptions{e: e}
	c := &cobra.Command{
		Use:   "install-hook",
		Short: "Make git's pre-commit hook run aipm leases check --staged",
		Long: `Add to the pre-commit hook of the project's git work tree (in core.hooksPath
when set) one line that runs aipm leases check --staged, so that a commit of
a path another holds exclusively is refused; and the same to the hook of each
submodule checked out in it, whose commits run a hook of their own, and of
each linked worktree git runs another hook for. A missing hook is created; an
existing shell script keeps everything it does, the line going right after
its first; a second run changes nothing. A hook in another language is left
alone, and the line to add to it is printed. The hook runs the aipm on PATH.
Run it again after adding a submodule or a worktree, or setting
core.hooksPath: aipm doctor warns of a hook git runs without the line.`,
		Example: "  aipm leases install-hook",
		Args:    argsNone,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(o)
			}
			return leasesInstallHookRun(cmd, o)
		},
	}
	return c
}

func leasesInstallHookRun(cmd *cobra.Command, o *leasesInstallHookOptions) error {
	e, _, err := o.e.leaseHome(cmd.Context())
	if err != nil {
		return err
	}
	dir, err := e.findProject()
	if err != nil {
		return err
	}
	hooks, err := gitstaged.InstallHook(cmd.Context(), dir)
	if errors.Is(err, gitstaged.ErrNoRepository) {
		return usageError("leases install-hook: the project is not in a git work tree: run git init first")
	}
	bad := 0
	for _, h := range hooks {
		sub := ""
		if h.Where != "" {
			sub = " in " + h.Where
		}
		switch {
		case h.Err != nil:
			bad++
			fmt.Fprintf(o.e.stderr, "aipm: leases install-hook: %s: %v\n", h.Path, h.Err)
		case !h.Changed:
			fmt.Fprintf(o.e.stdout, "%s already runs aipm leases check --staged%s\n", h.Path, sub)
		default:
			fmt.Fprintf(o.e.stdout, "%s runs aipm leases check --staged before each commit%s\n", h.Path, sub)
		}
	}
	if err != nil {
		return fmt.Errorf("leases install-hook: %w", err)
	}
	if bad > 0 {
		return failed("leases install-hook: %s of %d not guarded: add the line to each yourself, as its line says", plural(bad, "hook"), len(hooks))
	}
	return nil
}
