package main

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"aipm/fsstore"
)

type taskEditOptions struct {
	e      *env
	ID     string
	Change fsstore.TaskChange
	As     string
	JSON   bool
}

func newCmdTaskEdit(e *env, runF func(*taskEditOptions) error) *cobra.Command {
	o := &taskEditOptions{e: e}
	var title, priority, description string
	c := &cobra.Command{
		Use:   "edit ID [--title T] [--priority P] [--description D]",
		Short: "Change a task's title, priority or description",
		Long: `Change a task's title, priority or description, with the limits of aipm task
add. The task document is changed by compare-and-swap, so an edit of the same
file made meanwhile by hand is not lost. Its status, assignee and approval are
changed by aipm task status, assign, approve and reject.`,
		Example: `  aipm task edit 01KAQ7 --title "Fix the login form on mobile"
  aipm task edit 01KAQ7 --priority urgent
  aipm task edit 01KAQ7 --description "Steps to reproduce: ..." --json`,
		Args: argsExactly(1, "exactly one task id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ID = args[0]
			f := cmd.Flags()
			if !f.Changed("title") && !f.Changed("priority") && !f.Changed("description") {
				return usageError("task edit needs at least one of --title, --priority, --description: see aipm task edit --help")
			}
			if f.Changed("title") {
				o.Change.Title = &title
			}
			if f.Changed("priority") {
				o.Change.Priority = &priority
			}
			if f.Changed("description") {
				o.Change.Description = &description
			}
			if err := checkTaskEdit(o.Change); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return taskEditRun(cmd, o)
		},
	}
	c.ValidArgsFunction = e.completeTasks
	f := c.Flags()
	f.StringVar(&title, "title", "", "the new title")
	f.StringVar(&priority, "priority", "", "the new priority: "+strings.Join(fsstore.Priorities, ", "))
	f.StringVar(&description, "description", "", "the new description (\"\" empties it)")
	f.StringVar(&o.As, "as", "", "who makes the change (default $AIPM_AS, else the only human)")
	f.BoolVar(&o.JSON, "json", false, "print the task as JSON")
	c.RegisterFlagCompletionFunc("priority", cobra.FixedCompletions(fsstore.Priorities, cobra.ShellCompDirectiveNoFileComp))
	return c
}

// checkTaskEdit refuses the values task add refuses, before the project is
// opened (UpdateTask checks them again).
func checkTaskEdit(ch fsstore.TaskChange) error {
	if ch.Title != nil {
		*ch.Title = strings.TrimSpace(*ch.Title)
		if *ch.Title == "" {
			return usageError("task edit: the title is empty: say in a few words what the work is")
		}
		if err := fsstore.CheckText("title", *ch.Title); err != nil {
			return usageError("task edit: %v", err)
		}
	}
	if ch.Priority != nil && !slices.Contains(fsstore.Priorities, *ch.Priority) {
		return usageError("task edit: priority %q is invalid: use one of %s", *ch.Priority, strings.Join(fsstore.Priorities, ", "))
	}
	if ch.Description != nil {
		if err := fsstore.CheckText("description", *ch.Description); err != nil {
			return usageError("task edit: %v", err)
		}
	}
	return nil
}

func taskEditRun(cmd *cobra.Command, o *taskEditOptions) error {
	store, cfg, by, err := o.e.openAs(o.As)
	if err != nil {
		return err
	}
	id, err := taskID(store, o.ID)
	if err != nil {
		return err
	}
	before, err := store.Task(id)
	if err != nil {
		return fmt.Errorf("task edit: %w", err)
	}
	after := before
	if !sameFields(before, o.Change) { // an edit to the same values writes nothing
		if after, err = store.UpdateTask(cmd.Context(), cfg, id, by, o.Change); err != nil {
			return fmt.Errorf("task edit: %w", err)
		}
	}
	if o.JSON {
		return writeJSON(o.e.stdout, after)
	}
	w := o.e.stdout
	changed := false
	if before.Title != after.Title {
		fmt.Fprintf(w, "%s: title %q -> %q\n", after.ID, before.Title, after.Title)
		changed = true
	}
	if before.Priority != after.Priority {
		fmt.Fprintf(w, "%s: priority %s -> %s\n", after.ID, before.Priority, after.Priority)
		changed = true
	}
	if before.Description != after.Description {
		fmt.Fprintf(w, "%s: description changed (%d -> %d characters)\n", after.ID, utf8.RuneCountInString(before.Description), utf8.RuneCountInString(after.Description))
		changed = true
	}
	if !changed {
		fmt.Fprintf(w, "%s: nothing changed\n", after.ID)
	}
	return nil
}

// sameFields says whether t already has every value ch sets.
func sameFields(t fsstore.Task, ch fsstore.TaskChange) bool {
	same := func(v *string, have string) bool { return v == nil || *v == have }
	return same(ch.Title, t.Title) && same(ch.Priority, t.Priority) && same(ch.Description, t.Description)
}
