package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"aipm/internal/shell"
)

// envSSHCommand names the ssh program and its options for --remote and
// the ssh entries, split on spaces, as GIT_SSH_COMMAND.
const envSSHCommand = "AIPM_SSH_COMMAND"

// remoteFlagUsage is the help line of the global --remote.
const remoteFlagUsage = "run the command on another machine over ssh: HOST[:PATH] (PATH: the project there; without it, ssh's login directory finds it)"

// remoteTarget is HOST[:PATH] of --remote.
type remoteTarget struct {
	host, dir string
}

// parseRemote reads HOST[:PATH]; a host in brackets may hold colons
// ([::1]:/p).
func parseRemote(v string) (remoteTarget, error) {
	var t remoteTarget
	if rest, ok := strings.CutPrefix(v, "["); ok {
		host, after, found := strings.Cut(rest, "]")
		if !found || (after != "" && after[0] != ':') {
			return t, usageError("--remote %q: a bracketed host needs its closing ], as [::1]:/path", v)
		}
		t.host, t.dir = host, strings.TrimPrefix(after, ":")
	} else {
		t.host, t.dir, _ = strings.Cut(v, ":")
	}
	switch {
	case t.host == "":
		return t, usageError("--remote %q names no host: give HOST or HOST:PATH, as --remote home:/srv/project", v)
	case strings.HasPrefix(t.host, "-"):
		return t, usageError("--remote %q: a host cannot start with -", v)
	case strings.ContainsAny(t.host, " \t\n"):
		return t, usageError("--remote %q: a host has no spaces", v)
	}
	return t, nil
}

// remoteSplit finds the global --remote among the flags before the
// command (aipm --remote HOST[:PATH] COMMAND ...) and returns its value and
// the arguments without it. --remote after the command is a mistake, but
// for mcp-config, whose own --remote names the machine its entry reaches.
func remoteSplit(args []string) (value string, rest []string, found bool, err error) {
	i := 0
	for ; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--remote":
			if i+1 >= len(args) {
				return "", nil, true, usageError("--remote needs a value: aipm --remote HOST[:PATH] COMMAND ...")
			}
			rest = append(append(rest, args[:i]...), args[i+2:]...)
			return args[i+1], rest, true, nil
		case strings.HasPrefix(a, "--remote="):
			rest = append(append(rest, args[:i]...), args[i+1:]...)
			return strings.TrimPrefix(a, "--remote="), rest, true, nil
		case a == "--dir" && i+1 < len(args):
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return "", args, false, laterRemote(args[i:])
		}
	}
	return "", args, false, nil
}

// laterRemote refuses --remote after the command word cmd[0] (but
// mcp-config's own).
func laterRemote(cmd []string) error {
	if cmd[0] == "mcp-config" || cmd[0] == "help" {
		return nil
	}
	for _, a := range cmd[1:] {
		if a == "--" {
			return nil
		}
		if a == "--remote" || strings.HasPrefix(a, "--remote=") {
			return usageError("--remote goes before the command: aipm --remote HOST[:PATH] %s ...", cmd[0])
		}
	}
	return nil
}

// sshArgv is the argv that runs remote (already shell words) on host:
// $AIPM_SSH_COMMAND (default ssh), -T or -t, host, --, remote.
func sshArgv(getenv func(string) string, tty bool, host string, remote []string) []string {
	argv := sshProgram(getenv)
	if tty {
		argv = append(argv, "-t")
	} else {
		argv = append(argv, "-T")
	}
	return append(append(argv, host, "--"), remote...)
}

// remotePath quotes dir for the remote shell, leaving a leading ~/ to it
// (home:~/project is the project in the remote user's home).
func remotePath(dir string) string {
	if rest, ok := strings.CutPrefix(dir, "~/"); ok {
		return "~/" + shell.Quote(rest)
	}
	return shell.Quote(dir)
}

// sshProgram is $AIPM_SSH_COMMAND split on spaces, or ssh.
func sshProgram(getenv func(string) string) []string {
	if argv := strings.Fields(getenv(envSSHCommand)); len(argv) > 0 {
		return argv
	}
	return []string{"ssh"}
}

// remoteCommand is the command line run on the home machine for args:
// env [AIPM_AS=...] aipm [--dir PATH] args..., each word quoted. Only
// AIPM_AS crosses: a passkey never leaves this machine.
func remoteCommand(getenv func(string) string, t remoteTarget, args []string) []string {
	words := []string{"env"}
	if as := getenv("AIPM_AS"); as != "" {
		words = append(words, shell.Quote("AIPM_AS="+as))
	}
	words = append(words, "aipm")
	if t.dir != "" {
		words = append(words, "--dir", remotePath(t.dir))
	}
	for _, a := range args {
		words = append(words, shell.Quote(a))
	}
	return words
}

// runRemote runs args on the machine --remote names, through ssh: the
// three streams pass through and the exit code is the remote command's;
// ssh's own failure (255) is one sentence. ssh gets a terminal (-t) only
// when this process has one on both stdin and stdout.
func runRemote(ctx context.Context, e *env, value string, args []string) error {
	t, err := parseRemote(value)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return usageError("--remote %s has no command to run: aipm --remote %s COMMAND ..., as aipm --remote %s status", value, value, value)
	}
	in, _ := e.stdin.(*os.File)
	tty := in != nil && isTerminal(in) && isTerminal(e.stdout)
	argv := sshArgv(e.getenv, tty, t.host, remoteCommand(e.getenv, t, args))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.stdin, e.stdout, e.stderr
	// Not ended by ctx: Ctrl-C reaches ssh from the terminal too, and ssh
	// ends the remote command.
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee) && ee.ExitCode() == 255:
		return &exitError{code: exitFailed, err: fmt.Errorf("%s to %s failed (exit 255, its message is above): check that %s works", argv[0], t.host, strings.Join(append(sshProgram(e.getenv), t.host, "true"), " "))}
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return &exitError{code: ee.ExitCode()} // the remote command said why
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return &exitError{code: exitFailed, err: fmt.Errorf("%s to %s was killed by %v", argv[0], t.host, ws.Signal())}
		}
	}
	return &exitError{code: exitFailed, err: fmt.Errorf("run %s for --remote: %w (set %s to the ssh program and its options)", argv[0], err, envSSHCommand)}
}
