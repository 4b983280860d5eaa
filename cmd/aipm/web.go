package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"

	"github.com/spf13/cobra"

	"aipm/web"
)

type webOptions struct {
	e           *env
	Addr        string
	AllowRemote bool
	Open        bool
}

func newCmdWeb(e *env) *cobra.Command {
	o := &webOptions{e: e}
	c := &cobra.Command{
		Use:   "web [--addr 127.0.0.1:0] [--open]",
		Short: "Serve a live board of the project to your browser",
		Long: `Serve one page, from this binary, that shows the project live: the task
board by status, agents with their sessions, processes and unread counts,
chats per pair, conversations, delegations, approvals, triggers, what the
watcher started and the live file leases. It changes the moment the files
under .ai-pm/ change (server-sent events; aipm watch need not run). From the
page a human sends and replies, creates tasks, sets a task's status (blocked
needs a reason; the assignee is interrupted), approves or rejects requested
tasks and breaks leases (with a reason each holder is told), through the same
rules as the CLI.

It prints the page's URL with a random token; the first visit trades the
token for a cookie. It listens on loopback (127.0.0.1, a free port) unless
--addr says otherwise; an address that is not loopback needs --allow-remote,
since anyone who reaches it and learns the token acts as the project's
humans over plain HTTP (prefer an SSH tunnel). Every request needs the token,
Host and Origin must name this server, every POST carries the page's CSRF
token, and the page loads nothing from anywhere else. Ctrl-C stops it.`,
		Example: "  aipm web\n  aipm web --open\n  aipm web --addr 127.0.0.1:8080",
		Args:    argsNone,
		RunE:    func(cmd *cobra.Command, args []string) error { return webRun(cmd.Context(), o) },
	}
	c.Flags().StringVar(&o.Addr, "addr", "127.0.0.1:0", "where to listen (host:port; port 0 picks a free one)")
	c.Flags().BoolVar(&o.AllowRemote, "allow-remote", false, "allow an address that is not loopback (plain HTTP: prefer an SSH tunnel)")
	c.Flags().BoolVar(&o.Open, "open", false, "open the page in the default browser (xdg-open)")
	return c
}

func webRun(ctx context.Context, o *webOptions) error {
	store, _, err := o.e.open()
	if err != nil {
		return err
	}
	srv, err := web.Start(ctx, store, web.Options{Addr: o.Addr, AllowRemote: o.AllowRemote})
	if errors.Is(err, web.ErrRemote) || errors.Is(err, web.ErrAddr) {
		return asUsage(err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(o.e.stdout, "aipm web: %s\n(the token in the URL is the key to the board; Ctrl-C stops)\n", srv.URL())
	if o.Open {
		openBrowser(o.e, srv.URL())
	}
	return srv.Wait()
}

// openBrowser opens url with xdg-open, or says to open it by hand.
func openBrowser(e *env, url string) {
	if err := exec.Command("xdg-open", url).Start(); err != nil {
		fmt.Fprintf(e.stderr, "aipm: warning: cannot open a browser (%v): open the URL above by hand\n", err)
	}
}
