package clientconfig

// remoteKeepAlive are the ssh options of a remote entry: a link that dies
// without a word (a laptop's lid closed, a NAT forgetting the connection)
// ends ssh within 45 seconds, so the client sees its server gone instead of
// a call that never answers; the home's aipm serve then reads EOF and ends
// the session.
var remoteKeepAlive = []string{"-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=3"}

// remoteEnvVars are what Codex, which starts servers with a small
// environment, must pass to ssh: its agent's socket.
var remoteEnvVars = []string{"SSH_AUTH_SOCK"}

// RemoteServer is the entry that reaches the home machine through ssh:
// ssh -T [keep-alives] HOST -- aipm [--dir PATH] serve --agent ID. The
// passkey stays there (serve --agent reads the one saved there); the entry
// holds no secret and sets no credential variable. ssh is the ssh program
// and its options; dir, when not "", is the project's path there, quoted
// for the remote shell.
func RemoteServer(ssh []string, host, dir, agent string) Server {
	args := append(append(append([]string{}, ssh[1:]...), "-T"), remoteKeepAlive...)
	args = append(args, host, "--", "aipm")
	if dir != "" {
		args = append(args, "--dir", dir)
	}
	args = append(args, "serve", "--agent", agent)
	return Server{Command: ssh[0], Args: args, Remote: true, EnvVars: remoteEnvVars, ToolTimeoutSec: 60, ApprovalMode: "approve"}
}
