package hook

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"aipm/fsstore"
	"aipm/internal/clients"
	"aipm/wake"
)

// Options are what a hook is called with (flags of aipm hook and of the
// lighter aipm-hook binary).
type Options struct {
	Client string // a registered client's name (clients.Names)
	Wake   bool   // the idle wake (Claude Code's asyncRewake Stop hook)
	Dir    string // the project; "" finds it as every aipm command does
}

// Env is the hook process's environment and streams.
type Env struct {
	Getenv func(string) string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Interrupt, when set, is ctx cancelled by SIGINT and SIGTERM, with
	// its stop (signal.NotifyContext). Command asks for it for the idle
	// wake alone, which waits for minutes and must then exit 0: the first
	// signal registered costs a round trip to a thread the runtime starts
	// for it (some 0.2 ms, and as much again to stop), a good part of a
	// short hook's budget over a hello-world program (P8a), while a short
	// hook a signal ends answers nothing either way. A short hook a
	// signal kills mid-write leaves what a crash leaves: its flocks go
	// with it, an atomic write at most a hidden temp file.
	Interrupt func(context.Context) (context.Context, context.CancelFunc)
}

// MaxInput bounds what is read of the client's stdin (a tool's whole
// input: a large file written by the model).
const MaxInput = 64 << 20

// WorkLimit bounds one hook's work, well inside the clients' own timeouts
// (aipm's entries give 10 s): a hook the client kills counts as no answer,
// which for PreToolUse would let the tool run.
const WorkLimit = 3 * time.Second

// Main is a whole hook process: it reads the event on stdin, answers it
// for the agent whose credential env holds, and returns the exit code.
// A mistake in how the hook was set up or called (an unknown client,
// stdin that is not JSON) is a line "aipm: hook: ..." on stderr and exit 1,
// never 2: both clients read a hook's 2 as "block", and a misconfigured
// hook must not refuse every tool call. Exit 2 is only the idle wake's
// news, and the refusal of an event whose input could not be read while
// an interrupt waits (unreadable). No credential, no project, a wrong
// passkey, or no session: no output, exit 0.
func Main(ctx context.Context, o Options, env Env) (code int) {
	defer func() {
		if p := recover(); p != nil { // a panic would exit 2
			fmt.Fprintf(env.Stderr, "aipm: hook: internal error: %v\n", p)
			code = 1
		}
	}()
	c, ok := clients.Get(o.Client)
	switch {
	case !ok:
		return mistake(env, "unknown client %q: use %s", o.Client, clients.Known("--client"))
	case o.Wake && !c.Hooks.Wake:
		return mistake(env, "%s", c.Hooks.NoWake)
	}
	in, err := readInputWithin(env.Stdin, ReadLimit)
	if err != nil && !o.Wake {
		return unreadable(ctx, o, env, in, err)
	}
	h := forAgent(o.Dir, env.Getenv)
	if h == nil {
		return 0 // not aipm's agent: say nothing
	}
	h.Dialect = c.Hooks
	var res Result
	if o.Wake {
		res, err = h.Wake(ctx, wake.New())
	} else {
		ctx, cancel := context.WithTimeout(ctx, WorkLimit)
		defer cancel()
		res, err = h.Run(ctx, in)
	}
	if err != nil {
		// A hook never breaks the client: say why on stderr, exit 0.
		fmt.Fprintf(env.Stderr, "aipm hook: %v\n", err)
		return 0
	}
	h.recordDenial(ctx, env, in, res.Denied)
	if _, err := env.Stdout.Write(res.Stdout); err != nil {
		return 1
	}
	fmt.Fprint(env.Stderr, res.Stderr)
	return res.Exit
}

// recordDenial records the tool call in that the hook denies (d nil:
// none) for the client run aipm launch started (h.Launch), so that its
// end tells aipm's own denials from the client's refusals. Nothing is
// written for a client aipm did not start; a failure to record is said on
// stderr and denies all the same.
func (h *Hook) recordDenial(ctx context.Context, env Env, in Input, d *fsstore.Denial) {
	if d == nil || h.Launch == "" {
		return
	}
	d.ToolUseID, d.Tool = in.ToolUseID, in.ToolName
	if err := h.Store.Runs().RecordDenial(ctx, h.Agent, h.Launch, *d); err != nil {
		fmt.Fprintf(env.Stderr, "aipm hook: %v\n", err)
	}
}

// Command is the aipm-hook binary: its flags (--client, --wake, --dir,
// as aipm hook takes them) parsed from args, then Main (with env's
// Interrupt for --wake).
func Command(ctx context.Context, args []string, env Env) int {
	var o Options
	fs := flag.NewFlagSet("aipm-hook", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.Client, "client", clients.DefaultHookClient, "the client that runs the hook: "+clients.Known(""))
	fs.BoolVar(&o.Wake, "wake", false, "Claude Code's asyncRewake Stop hook")
	fs.StringVar(&o.Dir, "dir", "", "the project directory")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		if err == nil {
			err = fmt.Errorf("no arguments are taken, got %q: the event comes from stdin", fs.Arg(0))
		}
		return mistake(env, "%v: aipm-hook takes --client "+strings.Join(clients.Names(), "|")+", --wake and --dir (see aipm hook --help)", err)
	}
	if o.Wake && env.Interrupt != nil {
		var stop context.CancelFunc
		ctx, stop = env.Interrupt(ctx)
		defer stop()
	}
	return Main(ctx, o, env)
}

// unreadable answers an event whose input could not be read whole (not
// JSON, cut short, over MaxInput, or not all written within ReadLimit): a
// mistake, exit 1, except when a tool must not run. While an interrupt
// waits for the agent (the check needs no input), a PreToolUse of a tool
// not aipm's own, as far as the input named them, is denied, and an event
// it did not name gets exit 2, "block" to both clients, with the
// interrupt on stderr. A PreToolUse of a file-writing tool (or of a tool
// it did not name) is denied while another holder's exclusive lease could
// refuse its files, which are unknown, or the leases cannot be read
// (unreadableWrite). Nothing more is done than those checks.
func unreadable(ctx context.Context, o Options, env Env, in Input, err error) int {
	const format = "%v (the client writes one JSON object on stdin, at most %d MiB)"
	c, _ := clients.Get(o.Client)
	d := c.Hooks
	in.Event = d.Event(in.Event)
	tool := in.Event == PreToolUse && !d.Own(in.ToolName)
	if !tool && in.Event != "" {
		return mistake(env, format, err, MaxInput>>20)
	}
	h := forAgent(o.Dir, env.Getenv)
	if h == nil {
		return mistake(env, format, err, MaxInput>>20)
	}
	h.Dialect = d
	ctx, cancel := context.WithTimeout(ctx, WorkLimit)
	defer cancel()
	ses, ok, serr := h.Session(time.Now())
	var reason, why string
	if serr == nil && ok {
		reason, why, serr = h.refusal(ctx, ses)
	}
	if reason == "" && tool {
		reason, why = h.unreadableWrite(in, err), leaseDenial.Why
	}
	switch {
	case serr != nil && reason == "":
		fmt.Fprintf(env.Stderr, "aipm hook: %v\n", serr)
	case reason == "":
	case tool:
		res := denied(d, reason, fsstore.Denial{Why: why})
		h.recordDenial(ctx, env, in, res.Denied)
		if _, err := env.Stdout.Write(res.Stdout); err != nil {
			return 1
		}
		fmt.Fprintf(env.Stderr, "aipm: hook: "+format+"\n", err, MaxInput>>20)
		return 0
	default:
		fmt.Fprintf(env.Stderr, "%s\naipm: hook: "+format+"\n", reason, err, MaxInput>>20)
		return 2
	}
	return mistake(env, format, err, MaxInput>>20)
}

func mistake(env Env, format string, args ...any) int {
	fmt.Fprintf(env.Stderr, "aipm: hook: "+format+"\n", args...)
	return 1
}

// forAgent is the hook of the agent whose credential the environment
// holds, in the project fsstore.LocateProject finds (dir is --dir); nil
// when there is no credential, no project, or the credential is not the
// agent's.
func forAgent(dir string, getenv func(string) string) *Hook {
	cred, err := fsstore.CredentialFromEnv(getenv)
	if err != nil || cred == nil {
		return nil
	}
	dir, err = fsstore.LocateProject(dir, getenv("AIPM_DIR"))
	if err != nil {
		return nil
	}
	store, err := fsstore.Open(dir)
	if err != nil {
		return nil
	}
	cfg, err := store.LoadConfig()
	if err != nil || store.VerifyPasskey(cred.Agent, cred.Passkey) != nil {
		return nil
	}
	purpose := getenv(fsstore.EnvPurpose)
	if purpose != fsstore.PurposeTask && purpose != fsstore.PurposeChat {
		purpose = ""
	}
	return &Hook{Store: store, Config: cfg, Agent: cred.Agent, Purpose: purpose, Parent: os.Getppid(), Launch: getenv(fsstore.EnvLaunchID)}
}
