package main

import (
	"aipm/fsstore/storage"
	"fmt"
	"os"
	"path/filepath"
)

// remoteKeepAlive are the ssh options of a remote entry: a link that dies
// without a word (a laptop's lid closed, a NAT forgetting the connection)
// ends ssh within 45 seconds, so the client sees its server gone instead of
// a call that never answers; the home's aipm serve then reads EOF and ends
// the session.
var remoteKeepAlive = []string{"-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=3"}

// remoteEnvVars are what Codex, which starts servers with a small
// environment, must pass to ssh: its agent's socket.
var remoteEnvVars = []string{"SSH_AUTH_SOCK"}

// remoteServer is the entry that reaches the home machine through ssh:
// ssh -T [keep-alives] HOST -- aipm [--dir PATH] serve --agent ID. The
// passkey stays there (serve --agent reads the one saved there); the entry
// holds no secret and sets no credential variable.
func remoteServer(e *env, t remoteTarget, agent string) mcpServer {
	ssh := sshProgram(e.getenv)
	args := append(append(append([]string{}, ssh[1:]...), "-T"), remoteKeepAlive...)
	args = append(args, t.host, "--", "aipm")
	if t.dir != "" {
		args = append(args, "--dir", remotePath(t.dir))
	}
	args = append(args, "serve", "--agent", agent)
	return mcpServer{Command: ssh[0], Args: args, Remote: true, EnvVars: remoteEnvVars, ToolTimeoutSec: 60, ApprovalMode: "approve"}
}

// mcpConfigRemote prints or writes the entry for an agent on this machine
// that reaches the project on another one (--remote). No aipm hooks: they
// run aipm hook here, which needs the project's .ai-pm/; without them an
// interrupt still reaches the agent at its next aipm call. --write needs no
// project here: it merges into the files of --dir, else of the working
// directory (the checkout the agent's CLI starts in).
func mcpConfigRemote(o *mcpConfigOptions) error {
	e := o.e
	switch {
	case o.Agent == "":
		return usageError("mcp-config --remote needs --agent ID: aipm serve on the home machine holds that agent's saved passkey, so the entry carries no secret")
	case o.KeyFile != "":
		return usageError("mcp-config --remote takes no --passkey-file: the passkey stays on the home machine (aipm agent passkey %s --save there)", o.Agent)
	}
	if err := storage.CheckAgentID(o.Agent); err != nil {
		return usageError("mcp-config: --agent: %v", err)
	}
	t, err := parseRemote(o.Remote)
	if err != nil {
		return err
	}
	srv := remoteServer(e, t, o.Agent)
	client := mcpClients[o.Client]
	fmt.Fprintf(e.stderr, "aipm: no hooks in a remote entry: aipm hook needs the project's .ai-pm/ on this machine; an interrupt reaches %s at its next aipm call\n", o.Agent)
	if !o.Write {
		out, err := client.doc(srv)
		if err != nil {
			return fmt.Errorf("mcp-config %s: %w", o.Client, err)
		}
		fmt.Fprintf(e.stderr, "aipm: the entry runs aipm serve on %s for agent %s, whose passkey must be saved there (aipm agent passkey %s --save); --write merges it into this directory's files\n", t.host, o.Agent, o.Agent)
		_, err = e.stdout.Write(out)
		return err
	}
	dir := e.dir
	if dir == "" {
		if dir, err = os.Getwd(); err != nil {
			return fmt.Errorf("mcp-config --write: %w", err)
		}
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return fmt.Errorf("mcp-config --write: %w", err)
	}
	if err := writeFiles(e, o.Client, dir, srv); err != nil {
		return err
	}
	if client.written != nil {
		client.written(e, dir)
	}
	return nil
}
