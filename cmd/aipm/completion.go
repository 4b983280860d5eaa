package main

import (
	"strings"

	"github.com/spf13/cobra"

	"aipm/fsstore"
)

// Dynamic shell completion: agent ids from the config, task ids from the
// project (with their titles as descriptions), whole or without "tsk_" as
// typed. Errors complete nothing.

// completeAgents completes the agent argument at position pos (the flag's
// value when pos < 0), of type kind ("" for any).
func (e *env) completeAgents(pos int, kind string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if pos >= 0 && len(args) != pos {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		_, cfg, err := e.open()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, a := range cfg.Agents {
			if (kind == "" || a.Type == kind) && strings.HasPrefix(a.ID, toComplete) {
				out = append(out, cobra.CompletionWithDesc(a.ID, a.Type+" "+a.Role))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeTasks completes a task id as the first argument.
func (e *env) completeTasks(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) != 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return e.taskIDs(toComplete), cobra.ShellCompDirectiveNoFileComp
}

func (e *env) taskIDs(toComplete string) []cobra.Completion {
	store, _, err := e.open()
	if err != nil {
		return nil
	}
	tasks, _, _, err := store.Tasks(fsstore.TaskFilter{})
	if err != nil {
		return nil
	}
	var out []cobra.Completion
	for _, t := range tasks {
		if id, ok := completeID(t.ID, toComplete); ok {
			out = append(out, cobra.CompletionWithDesc(id, t.Status+": "+t.Title))
		}
	}
	return out
}

// completeID is id as a completion of toComplete, which may start the
// whole id or, like a short id without "tsk_", its time-sortable part, in
// either case (as fsstore.Store.ResolveID takes it): the typed characters
// and then the rest of the id. ok is false when toComplete starts neither.
func completeID(id, toComplete string) (string, bool) {
	body := id[strings.IndexByte(id, '_')+1:]
	for _, s := range []string{id, body} {
		if len(toComplete) <= len(s) && strings.EqualFold(toComplete, s[:len(toComplete)]) {
			return toComplete + s[len(toComplete):], true
		}
	}
	return "", false
}
