package clients

import (
	"encoding/json"
	"strings"
)

// The hook JSON Claude Code and Codex both document (Claude Code's hooks
// reference; Codex's hook output schemas, which refuse any field they do
// not name): only the fields both accept are ever written.

type specificOutput struct {
	HookEventName            string `json:"hookEventName"`
	AdditionalContext        string `json:"additionalContext,omitempty"`
	PermissionDecision       string `json:"permissionDecision,omitempty"`
	PermissionDecisionReason string `json:"permissionDecisionReason,omitempty"`
}

type hookOutput struct {
	Decision           string          `json:"decision,omitempty"`
	Reason             string          `json:"reason,omitempty"`
	HookSpecificOutput *specificOutput `json:"hookSpecificOutput,omitempty"`
}

func encodeAnswer(o hookOutput) Answer {
	data, _ := json.Marshal(o) // strings and structs only: cannot fail
	return Answer{Stdout: append(data, '\n')}
}

func jsonContext(event, text string) Answer {
	return encodeAnswer(hookOutput{HookSpecificOutput: &specificOutput{HookEventName: event, AdditionalContext: text}})
}

func jsonDeny(reason string) Answer {
	return encodeAnswer(hookOutput{HookSpecificOutput: &specificOutput{
		HookEventName: PreToolUse, PermissionDecision: "deny", PermissionDecisionReason: reason}})
}

func jsonBlock(reason string) Answer {
	return encodeAnswer(hookOutput{Decision: "block", Reason: reason})
}

// sameEvents maps aipm's event names to themselves: a client whose hooks
// are named as aipm's are.
func sameEvents() map[string]string {
	m := map[string]string{}
	for _, e := range Events {
		m[e] = e
	}
	return m
}

// fileField reads one path field of a tool's input.
func fileField(name string) func(json.RawMessage) []string {
	return func(input json.RawMessage) []string {
		var fields map[string]json.RawMessage
		if json.Unmarshal(input, &fields) != nil {
			return nil
		}
		var p string
		if json.Unmarshal(fields[name], &p) != nil || p == "" {
			return nil
		}
		return []string{p}
	}
}

// patchFiles reads the files an apply_patch patch writes (its
// tool_input.command): its "*** Add File:", "*** Update File:",
// "*** Delete File:" and "*** Move to:" lines.
func patchFiles(input json.RawMessage) []string {
	var in struct {
		Command string `json:"command"`
	}
	if json.Unmarshal(input, &in) != nil {
		return nil
	}
	var files []string
	for _, line := range strings.Split(in.Command, "\n") {
		line = strings.TrimSpace(line) // Codex trims a hunk's header too (and a CR)
		for _, head := range []string{"*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "} {
			if p, ok := strings.CutPrefix(line, head); ok && strings.TrimSpace(p) != "" {
				files = append(files, strings.TrimSpace(p))
			}
		}
	}
	return files
}
