package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"aipm/internal/remote"
)

// newCmdRoot is the command tree. Every command gets a one-line summary, a
// description and examples; flags parse into an options struct; errors go
// back to mainExit, which prints them once and chooses the exit code.
func newCmdRoot(e *env) *cobra.Command {
	root := newRoot(e)
	for _, c := range []struct {
		group string
		cmd   *cobra.Command
	}{
		{"project", newCmdInit(e, nil)},
		{"project", newCmdAgent(e)},
		{"project", newCmdStatus(e, nil)},
		{"project", newCmdDoctor(e, nil)},
		{"project", newCmdCompact(e, nil)},
		{"project", newCmdConfig(e)},
		{"project", newCmdDemo(e, nil)},
		{"project", newCmdWatch(e, nil)},
		{"project", newCmdWeb(e)},
		{"work", newCmdTask(e)},
		{"work", newCmdSend(e, nil)},
		{"work", newCmdInbox(e, nil)},
		{"work", newCmdLog(e, nil)},
		{"work", newCmdNotifications(e, nil)},
		{"work", newCmdConversations(e, nil)},
		{"work", newCmdConversation(e)},
		{"work", newCmdDelegations(e, nil)},
		{"work", newCmdInterrupt(e, nil)},
		{"work", newCmdLeases(e, nil)},
		{"agents", newCmdServe(e)},
		{"agents", newCmdMCPConfig(e)},
		{"agents", newCmdHook(e)},
		{"agents", newCmdLaunch(e)},
		{"agents", newCmdSim(e)},
		{"", newCmdVersion(e)},
	} {
		c.cmd.GroupID = c.group
		root.AddCommand(c.cmd)
	}
	root.SetHelpCommand(newCmdHelp())
	// cobra's completion command, made now rather than when it runs, so
	// that its verbs refuse an argument like every other command (exit 2,
	// in aipm's words) rather than with cobra's "unknown command" (exit 1).
	root.InitDefaultCompletionCmd()
	if c, _, err := root.Find([]string{"completion"}); err == nil && c != root {
		for _, shell := range c.Commands() {
			shell.Args = argsNone
		}
	}
	root.AddCommand(newHelpTopics()...)
	return root
}

// newRoot is the root command alone: its flags, groups and settings.
func newRoot(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:   "aipm",
		Short: "Coordinate AI coding agents and humans through the project's .ai-pm/ directory",
		Long: `aipm lets a team of AI coding agents (Claude Code, Codex CLI, ...) and a few humans
coordinate on one project through the project's own directory. All state lives
under .ai-pm/ as flock-guarded JSONL and JSON files: no database, no server.

Agents reach aipm through "aipm serve", the stdio MCP server their CLI starts
(see "aipm mcp-config"). Humans use the other commands.

Commands find the project like git finds its repository: --dir DIR, else
$AIPM_DIR, else the nearest directory upwards that holds .ai-pm/. Changes are
credited to --as ID, else $AIPM_AS, else the project's only human.

Exit codes: 0 success; 1 the operation failed or was refused; 2 a usage
mistake (bad flag, value or id, no project); 130 interrupted (Ctrl-C).
See aipm help exit-codes, aipm help ids and aipm help environment.`,
		Example: `  aipm init --name myproject
  aipm agent add lead --type human --role manager
  aipm agent add coder --type ai --parent lead
  aipm task add "Fix the login form" --assignee coder
  aipm status`,
		Version:       version() + " " + runtime.Version(),
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          noUnknownSubcommand,
		RunE:          showHelp,
	}
	root.SetHelpFunc(e.helpFunc(root.HelpFunc()))
	root.SetVersionTemplate("aipm {{.Version}}\n")
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetIn(e.stdin)
	root.SetFlagErrorFunc(flagError)
	root.PersistentFlags().StringVar(&e.dir, "dir", "", "the project directory (default: $AIPM_DIR, else the nearest one upwards with .ai-pm/)")
	root.PersistentFlags().BoolVar(&e.utc, "utc", false, "show times in UTC instead of local time")
	// Read by run before the tree (remote.Split); declared for help.
	root.PersistentFlags().String("remote", "", remote.FlagUsage)
	root.AddGroup(
		&cobra.Group{ID: "project", Title: "Project:"},
		&cobra.Group{ID: "work", Title: "Tasks and chat:"},
		&cobra.Group{ID: "agents", Title: "For agents' CLIs:"},
	)
	return root
}

// newNoun is a command that only groups verbs (agent, task): alone it
// prints its help and exits 2 (a verb is missing); an unknown verb is a
// usage mistake with suggestions, with --help too.
func newNoun(use, short, long, example string, verbs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{
		Use:     use,
		Short:   short,
		Long:    long,
		Example: example,
		Args:    noUnknownSubcommand,
		RunE:    showHelp,
	}
	c.AddCommand(verbs...)
	return c
}

// showHelp is what a command that only groups others (aipm, a noun) does
// when run alone: its help on stdout, and a usage mistake (exit 2), since
// the command line lacks the command that does something.
func showHelp(cmd *cobra.Command, _ []string) error {
	if err := cmd.Help(); err != nil {
		return err
	}
	return errNoVerb(cmd)
}

// errNoVerb is the mistake of running a group of commands alone.
func errNoVerb(cmd *cobra.Command) error {
	return usageError("%s needs one of its commands, listed above.", cmd.CommandPath())
}

// helpFunc wraps cobra's help (dflt) for the rule of unknown commands:
// "aipm locks --help" is "aipm locks", a usage mistake, not the root's
// help. cobra shows help before it checks arguments, and its help cannot
// fail, so the mistake is kept in e.helpErr for run to return. A group run
// alone that cobra takes for help (completion) exits 2 like showHelp.
func (e *env) helpFunc(dflt func(*cobra.Command, []string)) func(*cobra.Command, []string) {
	return func(cmd *cobra.Command, args []string) {
		if cmd.HasAvailableSubCommands() && cmd.Flags().Parsed() {
			if err := noUnknownSubcommand(cmd, cmd.Flags().Args()); err != nil {
				e.helpErr = err
				return
			}
			if h := cmd.Flags().Lookup("help"); h != nil && !h.Changed && !cmd.Runnable() {
				e.helpErr = errNoVerb(cmd)
			}
		}
		dflt(cmd, args)
	}
}

// newCmdHelp is "aipm help [COMMAND...]": the command's help, and an
// unknown topic is a usage mistake like an unknown command.
func newCmdHelp() *cobra.Command {
	return &cobra.Command{
		Use:     "help [COMMAND]...",
		Short:   "Help about any command",
		Long:    "Print the help of a command: aipm help task status is aipm task status --help.",
		Example: "  aipm help\n  aipm help task status",
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			cmd, _, err := c.Root().Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []string
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() && strings.HasPrefix(sub.Name(), toComplete) {
					names = append(names, sub.Name()+"\t"+sub.Short)
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err == nil && len(rest) > 0 {
				err = noUnknownSubcommand(cmd, rest)
			}
			if err != nil {
				return usageError("no help topic %q: run aipm --help for the commands", strings.Join(args, " "))
			}
			return cmd.Help()
		},
	}
}

// noUnknownSubcommand refuses arguments to a command that only has
// subcommands, suggesting the nearest names ("did you mean").
func noUnknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's default, set only on its own path
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf(": did you mean %s?", strings.Join(s, " or "))
	} else {
		msg += fmt.Sprintf(": run %s --help", cmd.CommandPath())
	}
	return usageError("%s", msg)
}

// argsExactly accepts exactly n positional arguments; otherwise the usage
// error says what the command needs (want), e.g. "exactly one task id".
func argsExactly(n int, want string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError("%s needs %s, got %s: %s", cmd.CommandPath(), want, plural(len(args), "argument"), cmd.UseLine())
		}
		return nil
	}
}

// argsNone accepts no positional arguments.
func argsNone(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError("%s takes no arguments, got %q: see %s --help", cmd.CommandPath(), args[0], cmd.CommandPath())
	}
	return nil
}

// version is the module version aipm was built at, or "dev".
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

type versionOptions struct {
	e    *env
	JSON bool
}

func newCmdVersion(e *env) *cobra.Command {
	o := &versionOptions{e: e}
	c := &cobra.Command{
		Use:     "version",
		Short:   "Print aipm's version",
		Long:    "Print the version aipm was built at (dev for a build from a clone) and the Go version; the same as aipm --version.",
		Example: "  aipm version\n  aipm version --json",
		Args:    argsNone,
		RunE:    func(cmd *cobra.Command, args []string) error { return versionRun(o) },
	}
	c.Flags().BoolVar(&o.JSON, "json", false, "print {version, go} as JSON")
	return c
}

func versionRun(o *versionOptions) error {
	if o.JSON {
		return writeJSON(o.e.stdout, map[string]string{"version": version(), "go": runtime.Version()})
	}
	_, err := fmt.Fprintf(o.e.stdout, "aipm %s %s\n", version(), runtime.Version())
	return err
}
