package main

import (
	"log/slog"

	"github.com/spf13/cobra"

	"aipm/internal/launch"
	"aipm/watcher"
)

type watchOptions struct {
	e         *env
	Once      bool
	UntilIdle bool
	LogFormat string
}

func newCmdWatch(e *env, runF func(*watchOptions) error) *cobra.Command {
	o := &watchOptions{e: e}
	c := &cobra.Command{
		Use:   "watch [--once | --until-idle] [--log-format text|json]",
		Short: "Run the project's daemon: turn file changes into triggers, interrupts and agent starts",
		Long: `Watch .ai-pm/ and react (one watcher per project; a second one refuses):
  - an agent with unread chat, a conversation request, or a task set in
    progress, and no live session for it, gets pending/AGENT.PURPOSE.json;
  - a task set to blocked or cancelled by someone else (also by hand, in an
    editor) while its agent works on it interrupts the agent;
  - conversation, session and trigger deadlines are applied;
  - an agent whose config has a command is started for its trigger, with
    AIPM_AGENT_ID, AIPM_PASSKEY_FILE, AIPM_PURPOSE and AIPM_PROJECT_DIR; its
    output goes to .ai-pm/logs/AGENT/; one that has not authenticated within
    [defaults] authenticate_within (2m) is stopped;
  - how each run ended is recorded (aipm status shows it), and a run that
    failed, never authenticated or exited without working is told to the
    agent's human once, with its log's last line and the fix;
  - config.toml is reloaded when edited (an invalid one keeps the old).
It logs to stderr and stops on Ctrl-C or SIGTERM, stopping the agents it
started. --once runs one pass (no process is started) and exits: for cron and
scripts. --until-idle runs like a watcher until no agent it started is
running and none has work to start, then exits: a first try, a script, a CI
job; it exits 1, naming the agent and why, when a run failed and its work
remains. An agent can be started only if its passkey was saved with
aipm agent passkey ID --save; one whose client (aipm agent add --client) is
not on PATH is named at start.`,
		Example: "  aipm watch\n  aipm watch --log-format json 2>watch.log\n  aipm watch --once\n  aipm watch --until-idle",
		Args:    argsNone,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Once && o.UntilIdle {
				return usageError("watch: give --once or --until-idle, not both")
			}
			if o.LogFormat != "text" && o.LogFormat != "json" {
				return usageError("watch: --log-format %q is invalid: use text or json", o.LogFormat)
			}
			if runF != nil {
				return runF(o)
			}
			return watchRun(cmd, o)
		},
	}
	c.Flags().BoolVar(&o.Once, "once", false, "run one reconcile pass and exit")
	c.Flags().BoolVar(&o.UntilIdle, "until-idle", false, "exit once no agent it started is running and none has work to start; exit 1, naming the agent and why, when a run failed and its work remains")
	c.Flags().StringVar(&o.LogFormat, "log-format", "text", "log format on stderr: text or json")
	return c
}

func watchRun(cmd *cobra.Command, o *watchOptions) error {
	store, err := o.e.openStore()
	if err != nil {
		return err
	}
	hopts := &slog.HandlerOptions{Level: logLevel(o.e.getenv("AIPM_LOG"))}
	var h slog.Handler = slog.NewTextHandler(o.e.stderr, hopts)
	if o.LogFormat == "json" {
		h = slog.NewJSONHandler(o.e.stderr, hopts)
	}
	if cfg, err := store.LoadConfig(); err == nil {
		for _, a := range cfg.Agents {
			launch.WarnMissing(o.e.stderr, o.e.getenv("PATH"), a)
			launch.WarnRoot(o.e.stderr, o.e.host(), a)
		}
	}
	d := watcher.New(store, slog.New(h))
	d.UntilIdle = o.UntilIdle
	if o.Once {
		return d.Once(cmd.Context())
	}
	return d.Run(cmd.Context())
}
