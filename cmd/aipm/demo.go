package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/spf13/cobra"

	"aipm/internal/demo"
)

type demoOptions struct {
	e        *env
	Keep     bool // the default; --rm removes the project
	Remove   bool
	Lang     string
	Web      bool
	Scenario string
}

func newCmdDemo(e *env, runF func(*demoOptions) error) *cobra.Command {
	o := &demoOptions{e: e}
	c := &cobra.Command{
		Use:   "demo [--rm] [--lang en|ja] [--web] [--scenario default|group]",
		Short: "Run the whole system on a throw-away project: a human, two simulated agents, the watcher",
		Long: `Create a project in a temporary directory with a human (lead) and two
simulated AI agents (coder and reviewer, whose command is aipm sim), start the
watcher, and drive a scenario while printing a live transcript:
  1. lead sets a task in progress for coder whose description delegates
     "6-round word chain with reviewer, start with apple": the watcher starts
     coder's task session, which delegates the talk to coder's chat session
     and waits; the watcher starts coder's chat session, which starts a
     conversation with reviewer (started by the watcher too); they play
     until max_turns; coder's chat session reports the delegation
     completed; the task session wakes and reports the task done;
  2. lead sets a long task in progress: the watcher starts coder's task
     session; lead then edits the task file by hand (an editor-style rename)
     to blocked: the watcher interrupts coder, which reports blocked;
  3. lead messages reviewer: the watcher starts reviewer's chat session,
     whose answer waits in lead's inbox.
The game is a word chain in English (each word starts with the last letter
of the one before); --lang ja plays shiritori, its Japanese original, in kana.
Every aipm command is printed as a line that pastes into a shell; "watch |"
lines are the watcher's log, "chat |" lines the messages as they are
written, "state |" lines each change of a task's or delegation's state; each
idea is explained in one line the first time it appears. A summary of the
files ends it, then the next steps, each a command that works where you
ran the demo ("go run ./cmd/aipm ..." before aipm is installed). The project
is kept to explore (its path is printed; --rm removes it). Passkeys are never
printed. No model and no network are involved; it takes a few seconds.

--scenario group runs another scenario instead: lead asks coder for a
9-turn word game with reviewer and tester; coder starts a group conversation
(turns go coder, reviewer, tester, round-robin; each turn reaches both others),
the watcher starts the other two, and all three are told of its end once;
then lead sends one message to the group "team" ([groups] in config.toml),
and each member answers lead alone.

The agents' command is "aipm sim": a watcher runs the word aipm as itself, so
the kept project's agents run with the aipm that watches it.

--web serves the live board of the demo project (aipm web) while it runs and
prints its URL first; the board stays up after the demo until Ctrl-C.`,
		Example: "  aipm demo\n  aipm demo --lang ja\n  aipm demo --rm\n  aipm demo --web\n  aipm demo --scenario group",
		Args:    argsNone,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(o)
			}
			return demoRun(cmd, o)
		},
	}
	c.Flags().BoolVar(&o.Keep, "keep", true, "keep the demo project and print its path (the default)")
	c.Flags().BoolVar(&o.Remove, "rm", false, "remove the demo project when it succeeded")
	c.Flags().StringVar(&o.Lang, "lang", "en", "the language of the agents' word game: en (a word chain) or ja (shiritori, in kana)")
	c.Flags().StringVar(&o.Scenario, "scenario", "default", "default (a delegated word game, then an interrupt) or group (a three-agent conversation and a broadcast)")
	c.Flags().BoolVar(&o.Web, "web", false, "serve the demo project's live board (aipm web) beside the transcript, until Ctrl-C")
	return c
}

func demoRun(cmd *cobra.Command, o *demoOptions) error {
	if err := demo.Check(o.Lang, o.Scenario); err != nil {
		return asUsage(err)
	}
	exe, err := selfExe()
	if err != nil {
		return err
	}
	e := o.e
	return demo.Run(cmd.Context(), demo.Options{
		Lang: o.Lang, Scenario: o.Scenario, Remove: o.Remove, Web: o.Web, Exe: exe,
		CLI: func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
			return run(ctx, args, getenv, nil, stdout, stderr)
		},
		Getenv: e.getenv, Colour: e.colour, Stdout: e.stdout, Stderr: e.stderr,
	})
}

// selfExe is the path of this aipm binary, for the agents' command: argv[0]
// as run (so a test harness that dispatches on the program's name works),
// else the executable.
func selfExe() (string, error) {
	if p, err := exec.LookPath(os.Args[0]); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs, nil
		}
	}
	p, err := os.Executable()
	if err != nil {
		return "", errors.New("demo: cannot find the aipm executable: " + err.Error())
	}
	return p, nil
}
