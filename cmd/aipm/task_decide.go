package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"aipm/fsstore"
)

type taskDecideOptions struct {
	e        *env
	Approval string // fsstore.ApprovalApproved or fsstore.ApprovalRejected
	ID       string
	Reason   string
	As       string
	JSON     bool
}

// newCmdTaskDecide is task approve or task reject: the decision on a task
// an agent requested from a human who is not its parent.
func newCmdTaskDecide(e *env, approval string, runF func(*taskDecideOptions) error) *cobra.Command {
	o := &taskDecideOptions{e: e, Approval: approval}
	c := &cobra.Command{
		Use:   "approve ID",
		Short: "Approve a task waiting for approval",
		Long: `Approve a task waiting for approval (pending_approval): a task an agent created
at the request of a human who is not its parent. It can then be started.
Only the humans the request asked, the assignee's human ancestors or a
manager (--role manager) may decide; never the requester itself.`,
		Example: "  aipm task approve 01KAQ7",
		Args:    argsExactly(1, "exactly one task id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ID = args[0]
			if runF != nil {
				return runF(o)
			}
			return taskDecideRun(cmd, o)
		},
	}
	if approval == fsstore.ApprovalRejected {
		c.Use, c.Short = "reject ID [--reason TEXT]", "Reject a task waiting for approval (it is cancelled)"
		c.Long = `Reject a task waiting for approval: it is cancelled, and the AI agent that
requested it is told why (--reason). Only the humans the request asked, the
assignee's human ancestors or a manager (--role manager) may decide; never
the requester itself.`
		c.Example = `  aipm task reject 01KAQ7 --reason "out of scope"`
		c.Flags().StringVar(&o.Reason, "reason", "", "why, told to the requester")
	}
	c.ValidArgsFunction = e.completeTasks
	c.Flags().StringVar(&o.As, "as", "", "who decides (default $AIPM_AS, else the only human)")
	c.Flags().BoolVar(&o.JSON, "json", false, "print the task as JSON")
	return c
}

func taskDecideRun(cmd *cobra.Command, o *taskDecideOptions) error {
	verb := map[string]string{fsstore.ApprovalApproved: "approve", fsstore.ApprovalRejected: "reject"}[o.Approval]
	store, cfg, by, err := o.e.openAs(o.As)
	if err != nil {
		return err
	}
	id, err := taskID(store, o.ID)
	if err != nil {
		return err
	}
	t, notified, err := store.Decide(cmd.Context(), cfg, id, by, o.Approval, o.Reason)
	if err != nil {
		return fmt.Errorf("task %s: %w", verb, err)
	}
	out := taskJSON{Task: t, Notified: notified}
	if o.JSON {
		return writeJSON(o.e.stdout, out)
	}
	if o.Approval == fsstore.ApprovalApproved {
		fmt.Fprintf(o.e.stdout, "approved %s\n", t.ID)
		return nil
	}
	fmt.Fprintf(o.e.stdout, "rejected %s (status %s)\n", t.ID, t.Status)
	if out.Notified != "" {
		fmt.Fprintf(o.e.stdout, "notified %s\n", out.Notified)
	}
	return nil
}
