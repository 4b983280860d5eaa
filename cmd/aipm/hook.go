package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"aipm/fsstore"
	"aipm/hook"
	"aipm/wake"
)

type hookOptions struct {
	e      *env
	Client string
	Wake   bool
}

func newCmdHook(e *env) *cobra.Command {
	o := &hookOptions{e: e}
	c := &cobra.Command{
		Use:   "hook [--client claude|codex] [--wake]",
		Short: "What Claude Code and Codex run at turn boundaries (aipm mcp-config --write sets it up)",
		Long: `Answer one Claude Code or Codex hook event, read as JSON from stdin
(hook_event_name: SessionStart, UserPromptSubmit, PreToolUse, PostToolUse,
Stop), for the agent whose credential the client's environment holds
(AIPM_AGENT_ID with AIPM_PASSKEY_FILE, as for aipm serve; AIPM_PURPOSE when
set). It tells the model, once per aipm session, what waits that it was not
told of (an interrupt, new messages, conversation requests, delegations,
notifications), in the client's documented JSON:

  SessionStart      who the agent is, its purpose, unread counts, pending work
  PreToolUse        refuses every tool but aipm's own while an interrupt waits
  PostToolUse,
  UserPromptSubmit  adds what is new to the model's context (never reads messages)
  Stop              keeps the model working once per notice (never when
                    stop_hook_active, never more than twice in a row)

Nothing new, no credential, or no aipm session: no output, exit 0. A hook
set up or called wrongly (a bad flag, stdin that is not JSON) exits 1, never
2: the clients read 2 as "block this tool call".

--wake (Claude Code only) is the asyncRewake Stop hook: it waits until
something new arrives for the session, writes it on stderr and exits 2,
which wakes the idle session; one waits per session (a second exits at
once), and it exits 0 when the session ends.`,
		Example: "  echo '{\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Bash\"}' | aipm hook --client claude",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return hookError("hook takes no arguments, got %q: the event comes from stdin; the client is --client claude or --client codex", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return hookRun(cmd.Context(), o) },
	}
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return hookError("hook: %v: see aipm hook --help", err)
	})
	c.Flags().StringVar(&o.Client, "client", hook.Claude, "the client that runs the hook: claude or codex")
	c.Flags().BoolVar(&o.Wake, "wake", false, "Claude Code's asyncRewake Stop hook: wait for something new, then wake the session")
	return c
}

// maxHookInput bounds what is read of the client's stdin (a tool's
// whole input: a large file written by the model).
const maxHookInput = 64 << 20

// hookError is a mistake in how the hook was set up or called. It exits
// 1, never 2: both clients read exit code 2 from a hook as "block", and a
// misconfigured hook must not refuse every tool call. Both show the
// message without blocking.
func hookError(format string, args ...any) error {
	return &exitError{code: exitFailed, err: fmt.Errorf(format, args...)}
}

// hookWorkLimit bounds one hook's work, well inside the clients' own
// timeouts (aipm's entries give 10 s): a hook the client kills counts as
// no answer, which for PreToolUse would let the tool run.
const hookWorkLimit = 3 * time.Second

func hookRun(ctx context.Context, o *hookOptions) (err error) {
	e := o.e
	defer func() {
		// A panic would exit 2, which the clients read as "block".
		if p := recover(); p != nil {
			err = hookError("hook: internal error: %v", p)
		}
	}()
	switch {
	case o.Client != hook.Claude && o.Client != hook.Codex:
		return hookError("hook: unknown client %q: use --client claude or --client codex", o.Client)
	case o.Wake && o.Client != hook.Claude:
		return hookError("hook: --wake is for Claude Code's asyncRewake Stop hook; Codex has no idle event, so leave --wake out with --client codex")
	}
	data, err := io.ReadAll(io.LimitReader(e.stdin, maxHookInput))
	if err != nil {
		return hookError("hook: read stdin: %v", err)
	}
	in, err := hook.DecodeInput(data)
	if err != nil && !o.Wake {
		return hookError("hook: %v (the client writes one JSON object on stdin, at most %d MiB)", err, maxHookInput>>20)
	}
	h := hookFor(e)
	if h == nil {
		return nil // not aipm's agent: say nothing
	}
	var res hook.Result
	if o.Wake {
		res, err = h.Wake(ctx, wake.New())
	} else {
		ctx, cancel := context.WithTimeout(ctx, hookWorkLimit)
		defer cancel()
		res, err = h.Run(ctx, in)
	}
	if err != nil {
		// A hook never breaks the client: say why on stderr, exit 0.
		fmt.Fprintf(e.stderr, "aipm hook: %v\n", err)
		return nil
	}
	if _, err := e.stdout.Write(res.Stdout); err != nil {
		return err
	}
	fmt.Fprint(e.stderr, res.Stderr)
	if res.Exit != 0 {
		return &exitError{code: res.Exit}
	}
	return nil
}

// hookFor is the hook of the agent whose credential the environment holds,
// in the project found as every command finds it; nil when there is no
// credential, no project, or the credential is not the agent's.
func hookFor(e *env) *hook.Hook {
	cred, err := serveCredential(e.getenv)
	if err != nil || cred == nil {
		return nil
	}
	store, cfg, err := e.open()
	if err != nil {
		return nil
	}
	if err := store.VerifyPasskey(cred.Agent, cred.Passkey); err != nil {
		return nil
	}
	purpose := e.getenv(fsstore.EnvPurpose)
	if purpose != fsstore.PurposeTask && purpose != fsstore.PurposeChat {
		purpose = ""
	}
	return &hook.Hook{Store: store, Config: cfg, Agent: cred.Agent, Purpose: purpose,
		Parent: os.Getppid()}
}
