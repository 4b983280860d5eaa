package hook

import (
	"encoding/json"
	"path/filepath"
	"strings"
)

// The clients' file-writing tools (DESIGN section 18): Claude Code's
// Edit, Write, MultiEdit and NotebookEdit name their file in tool_input;
// Codex's apply_patch carries the patch in tool_input.command, its files
// on its "*** Add File:", "*** Update File:", "*** Delete File:" and
// "*** Move to:" lines. A shell command that writes a file is left to the
// lease's holder and the git guard (aipm leases check).
var writingTools = map[string]func(input json.RawMessage) []string{
	"Edit":         fileField("file_path"),
	"Write":        fileField("file_path"),
	"MultiEdit":    fileField("file_path"),
	"NotebookEdit": fileField("notebook_path"),
	"apply_patch":  patchFiles,
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

// patchFiles reads the files an apply_patch patch writes.
func patchFiles(input json.RawMessage) []string {
	var in struct {
		Command string `json:"command"`
	}
	if json.Unmarshal(input, &in) != nil {
		return nil
	}
	var files []string
	for _, line := range strings.Split(in.Command, "\n") {
		for _, head := range []string{"*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "} {
			if p, ok := strings.CutPrefix(line, head); ok && strings.TrimSpace(p) != "" {
				files = append(files, strings.TrimSpace(p))
			}
		}
	}
	return files
}

// leaseRefusal is why in, a file-writing tool call, must not run: a file
// it writes is under another's exclusive lease ("" when none is, or the
// tool writes no file). Paths are taken relative to the call's cwd, and
// only those inside the project are looked at.
func (h *Hook) leaseRefusal(in Input) (string, error) {
	files := writingTools[in.ToolName]
	if files == nil {
		return "", nil
	}
	paths := files(in.ToolInput)
	if len(paths) == 0 {
		return "", nil
	}
	project := h.Store.ProjectDir()
	var names []string
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			p = filepath.Join(in.Cwd, p)
		}
		rel, err := filepath.Rel(project, filepath.Clean(p))
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue
		}
		names = append(names, filepath.ToSlash(rel))
	}
	if len(names) == 0 {
		return "", nil
	}
	blocked, err := h.Store.LeaseCheck(h.Agent, names)
	if err != nil || len(blocked) == 0 {
		return "", err
	}
	return "aipm: " + blocked[0].Error() + ".", nil
}
