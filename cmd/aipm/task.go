package main

import (
	"github.com/spf13/cobra"

	"aipm/fsstore"
)

func newCmdTask(e *env) *cobra.Command {
	return newNoun("task", "Add, list, show and change tasks",
		`Tasks are .ai-pm/tasks/<id>.json documents. Statuses: backlog, todo,
in_progress, blocked, done, cancelled; the allowed transitions are checked in
one place for the CLI and the agents' tools alike. A human moving an agent's
task in progress to blocked or cancelled interrupts the agent's task session.

A task id may be given whole or as any unique start of it, with or without
"tsk_": aipm task show 01KAQ7 works when one task id starts that way.
Changes are credited to --as ID, else $AIPM_AS, else the project's only human.`,
		`  aipm task add "Fix the login form" --assignee coder --priority high
  aipm task list --status in_progress
  aipm task list --ready
  aipm task graph
  aipm task show 01KAQ7
  aipm task edit 01KAQ7 --priority urgent
  aipm task status 01KAQ7 blocked --reason "the API is changing"`,
		newCmdTaskAdd(e, nil),
		newCmdTaskList(e, nil),
		newCmdTaskShow(e, nil),
		newCmdTaskEdit(e, nil),
		newCmdTaskAssign(e, nil),
		newCmdTaskDepend(e, nil),
		newCmdTaskGraph(e, nil),
		newCmdTaskStatus(e, nil),
		newCmdTaskDecide(e, fsstore.ApprovalApproved, nil),
		newCmdTaskDecide(e, fsstore.ApprovalRejected, nil),
	)
}

// completeStatuses completes a task status.
var completeStatuses = cobra.FixedCompletions(fsstore.Statuses, cobra.ShellCompDirectiveNoFileComp)
