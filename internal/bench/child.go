package bench

import (
	"context"
	"fmt"
	"os/exec"
	"syscall"
	"time"
)

// groupCommand is exec.CommandContext in a process group of its own: the
// end of ctx (a target's: its deadline, a watched process's exit, or the
// target's end) kills the whole group, the process and whatever it
// started; Wait gives up on pipes a leftover of the group holds open.
func groupCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// command is groupCommand in the target's context: every process a
// measurement starts is one.
func (b *bench) command(name string, args ...string) *exec.Cmd {
	return groupCommand(b.ctx, name, args...)
}

// watch ends the target's context as soon as s's session ends without
// close (its aipm serve, or the ssh that reaches it, exited): a client
// waiting on that server fails now, not at the deadline.
func (b *bench) watch(s *server, link string) {
	go func() {
		s.cs.Wait()
		if !s.closing.Load() {
			b.failWith(fmt.Errorf("aipm serve of %s (%s) exited: its session ended", s.agent, link))
		}
	}()
}

// watchHTTP waits for l's aipm serve --http; when it exits before close,
// it ends the target's context: the clients of all its agents fail now.
func (b *bench) watchHTTP(l *httpLink) {
	go func() {
		err := l.cmd.Wait()
		if !l.closing.Load() {
			b.failWith(fmt.Errorf("aipm serve --http exited (%v)", exitText(err)))
		}
		close(l.exited)
	}()
}

// exitText is how a process ended, as Wait's error says it.
func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}
