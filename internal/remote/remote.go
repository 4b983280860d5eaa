// Package remote is how aipm reaches a project on another machine over
// ssh: the global --remote HOST[:PATH] found among the arguments and read,
// and the ssh command line that runs aipm there (aipm --remote; the
// project's path in mcp-config --remote's entry). It runs nothing: its
// errors are usage mistakes, said in one sentence.
package remote

import (
	"fmt"
	"strings"

	"aipm/internal/shell"
)

// EnvSSHCommand names the ssh program and its options for --remote and
// the ssh entries, split on spaces, as GIT_SSH_COMMAND.
const EnvSSHCommand = "AIPM_SSH_COMMAND"

// FlagUsage is the help line of the global --remote.
const FlagUsage = "run the command on another machine over ssh: HOST[:PATH] (PATH: the project there; without it, ssh's login directory finds it)"

// Target is HOST[:PATH] of --remote.
type Target struct {
	Host, Dir string
}

// Parse reads HOST[:PATH]; a host in brackets may hold colons
// ([::1]:/p).
func Parse(v string) (Target, error) {
	var t Target
	if rest, ok := strings.CutPrefix(v, "["); ok {
		host, after, found := strings.Cut(rest, "]")
		if !found || (after != "" && after[0] != ':') {
			return t, fmt.Errorf("--remote %q: a bracketed host needs its closing ], as [::1]:/path", v)
		}
		t.Host, t.Dir = host, strings.TrimPrefix(after, ":")
	} else {
		t.Host, t.Dir, _ = strings.Cut(v, ":")
	}
	switch {
	case t.Host == "":
		return t, fmt.Errorf("--remote %q names no host: give HOST or HOST:PATH, as --remote home:/srv/project", v)
	case strings.HasPrefix(t.Host, "-"):
		return t, fmt.Errorf("--remote %q: a host cannot start with -", v)
	case strings.ContainsAny(t.Host, " \t\n"):
		return t, fmt.Errorf("--remote %q: a host has no spaces", v)
	}
	return t, nil
}

// Split finds the global --remote among the flags before the
// command (aipm --remote HOST[:PATH] COMMAND ...) and returns its value and
// the arguments without it. --remote after the command is a mistake, but
// for mcp-config, whose own --remote names the machine its entry reaches.
func Split(args []string) (value string, rest []string, found bool, err error) {
	i := 0
	for ; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--remote":
			if i+1 >= len(args) {
				return "", nil, true, fmt.Errorf("--remote needs a value: aipm --remote HOST[:PATH] COMMAND [ARGS]")
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
			return fmt.Errorf("--remote goes before the command: aipm --remote HOST[:PATH] %s [ARGS]", cmd[0])
		}
	}
	return nil
}

// Argv is the argv that runs remote (already shell words) on host:
// $AIPM_SSH_COMMAND (default ssh), -T or -t, host, --, remote.
func Argv(getenv func(string) string, tty bool, host string, remote []string) []string {
	argv := SSHProgram(getenv)
	if tty {
		argv = append(argv, "-t")
	} else {
		argv = append(argv, "-T")
	}
	return append(append(argv, host, "--"), remote...)
}

// Path quotes dir for the remote shell, leaving a leading ~/ to it
// (home:~/project is the project in the remote user's home).
func Path(dir string) string {
	if rest, ok := strings.CutPrefix(dir, "~/"); ok {
		return "~/" + shell.Quote(rest)
	}
	return shell.Quote(dir)
}

// SSHProgram is $AIPM_SSH_COMMAND split on spaces, or ssh.
func SSHProgram(getenv func(string) string) []string {
	if argv := strings.Fields(getenv(EnvSSHCommand)); len(argv) > 0 {
		return argv
	}
	return []string{"ssh"}
}

// Command is the command line run on the home machine for args:
// env [AIPM_AS=...] aipm [--dir PATH] args..., each word quoted. Only
// AIPM_AS crosses: a passkey never leaves this machine.
func Command(getenv func(string) string, t Target, args []string) []string {
	words := []string{"env"}
	if as := getenv("AIPM_AS"); as != "" {
		words = append(words, shell.Quote("AIPM_AS="+as))
	}
	words = append(words, "aipm")
	if t.Dir != "" {
		words = append(words, "--dir", Path(t.Dir))
	}
	for _, a := range args {
		words = append(words, shell.Quote(a))
	}
	return words
}
