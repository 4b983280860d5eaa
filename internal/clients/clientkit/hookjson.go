package clientkit

import (
	"encoding/json"
	"strings"
)

// The hook JSON Claude Code and Codex both document (Claude Code's hooks
// reference; Codex's hook output schemas, which refuse any field they do
// not name): only the fields both accept are ever written. Qwen Code and
// Copilot CLI read it as Claude Code's; Gemini CLI reads part of it.

// SpecificOutput is a hook answer's hookSpecificOutput.
type SpecificOutput struct {
	HookEventName            string `json:"hookEventName"`
	AdditionalContext        string `json:"additionalContext,omitempty"`
	PermissionDecision       string `json:"permissionDecision,omitempty"`
	PermissionDecisionReason string `json:"permissionDecisionReason,omitempty"`
}

// HookOutput is one hook answer in Claude Code's JSON.
type HookOutput struct {
	Decision           string          `json:"decision,omitempty"`
	Reason             string          `json:"reason,omitempty"`
	HookSpecificOutput *SpecificOutput `json:"hookSpecificOutput,omitempty"`
}

// EncodeAnswer is o as the line a hook prints, exit code 0.
func EncodeAnswer(o HookOutput) Answer {
	data, _ := json.Marshal(o) // strings and structs only: cannot fail
	return Answer{Stdout: append(data, '\n')}
}

// JSONContext adds text to the model's context at event (the client's
// name of it), as hookSpecificOutput.additionalContext.
func JSONContext(event, text string) Answer {
	return EncodeAnswer(HookOutput{HookSpecificOutput: &SpecificOutput{HookEventName: event, AdditionalContext: text}})
}

// JSONDeny refuses a tool call at PreToolUse (permissionDecision "deny"),
// with reason shown to the model.
func JSONDeny(reason string) Answer {
	return EncodeAnswer(HookOutput{HookSpecificOutput: &SpecificOutput{
		HookEventName: PreToolUse, PermissionDecision: "deny", PermissionDecisionReason: reason}})
}

// JSONBlock keeps the model working at Stop ({"decision":"block"}), with
// reason as what to do.
func JSONBlock(reason string) Answer {
	return EncodeAnswer(HookOutput{Decision: "block", Reason: reason})
}

// SameEvents maps aipm's event names to themselves: a client whose hooks
// are named as aipm's are.
func SameEvents() map[string]string {
	m := map[string]string{}
	for _, e := range Events {
		m[e] = e
	}
	return m
}

// FileField reads one path field of a tool's input (Dialect.WritingTools).
func FileField(name string) func(json.RawMessage) []string {
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

// PatchFiles reads the files an apply_patch patch writes (its
// tool_input.command): its "*** Add File:", "*** Update File:",
// "*** Delete File:" and "*** Move to:" lines.
func PatchFiles(input json.RawMessage) []string {
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
