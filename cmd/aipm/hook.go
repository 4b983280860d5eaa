package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"aipm/hook"
	"aipm/internal/clients"
)

type hookOptions struct {
	e      *env
	Client string
	Wake   bool
}

func newCmdHook(e *env) *cobra.Command {
	o := &hookOptions{e: e}
	c := &cobra.Command{
		Use:   "hook [--client " + strings.Join(clients.Names(), "|") + "] [--wake]",
		Short: "What the agent CLIs run at turn boundaries (aipm mcp-config --write and aipm launch set it up)",
		Long: `Answer one hook event of an agent CLI (Claude Code, Codex, Gemini CLI,
OpenCode's plugin of aipm's, ...: --client names it), read as JSON from stdin
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
2: the clients read 2 as "block this tool call". The hook reads one JSON
value of at most 64 MiB and answers without waiting for stdin to close; a
client that has not written it whole within 5 s is not waited for. An input
it cannot read whole (not JSON, over 64 MiB, or not written in time) still
refuses a tool while an interrupt waits: a PreToolUse it names is denied,
and an event it does not name exits 2. Such a PreToolUse of a file-writing
tool, or of a tool it does not name, is denied while another holds an
exclusive lease (or the leases cannot be read), since its files cannot be
checked; any other such input exits 1 with nothing on stdout.

--wake (Claude Code only) is the asyncRewake Stop hook: it waits until
something new arrives for the session, writes it on stderr and exits 2,
which wakes the idle session; one waits per session (a second exits at
once), and it exits 0 when the session ends.

aipm-hook (go install ./cmd/aipm-hook) is the same hook in a binary of its own,
which starts in a third of aipm's time; aipm mcp-config --write names it
when it is installed.`,
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
	c.Flags().StringVar(&o.Client, "client", clients.DefaultHookClient, "the client that runs the hook: "+clients.Known(""))
	c.Flags().BoolVar(&o.Wake, "wake", false, "Claude Code's asyncRewake Stop hook: wait for something new, then wake the session")
	return c
}

// hookError is a mistake in how the hook was called that cobra finds (a
// flag, an argument): exit 1, never 2, as hook.Main says why.
func hookError(format string, args ...any) error {
	return &exitError{code: exitFailed, err: fmt.Errorf(format, args...)}
}

// hookRun is the hook process (hook.Main, which aipm-hook runs too); its
// messages are printed already.
func hookRun(ctx context.Context, o *hookOptions) error {
	e := o.e
	code := hook.Main(ctx, hook.Options{Client: o.Client, Wake: o.Wake, Dir: e.dir},
		hook.Env{Getenv: e.getenv, Stdin: e.stdin, Stdout: e.stdout, Stderr: e.stderr})
	if code != 0 {
		return &exitError{code: code}
	}
	return nil
}
