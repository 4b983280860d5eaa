package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"aipm/internal/remote"
	"aipm/internal/table"
)

// runRemote runs args on the machine --remote names, through ssh: the
// three streams pass through and the exit code is the remote command's;
// ssh's own failure (255) is one sentence. ssh gets a terminal (-t) only
// when this process has one on both stdin and stdout.
func runRemote(ctx context.Context, e *env, value string, args []string) error {
	t, err := remote.Parse(value)
	if err != nil {
		return asUsage(err)
	}
	if len(args) == 0 {
		return usageError("--remote %s has no command to run: aipm --remote %s COMMAND ..., as aipm --remote %s status", value, value, value)
	}
	in, _ := e.stdin.(*os.File)
	tty := in != nil && table.IsTerminal(in) && table.IsTerminal(e.stdout)
	argv := remote.Argv(e.getenv, tty, t.Host, remote.Command(e.getenv, t, args))
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
		return &exitError{code: exitFailed, err: fmt.Errorf("%s to %s failed (exit 255, its message is above): check that %s works", argv[0], t.Host, strings.Join(append(remote.SSHProgram(e.getenv), t.Host, "true"), " "))}
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return &exitError{code: ee.ExitCode()} // the remote command said why
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return &exitError{code: exitFailed, err: fmt.Errorf("%s to %s was killed by %v", argv[0], t.Host, ws.Signal())}
		}
	}
	return &exitError{code: exitFailed, err: fmt.Errorf("run %s for --remote: %w (set %s to the ssh program and its options)", argv[0], err, remote.EnvSSHCommand)}
}
