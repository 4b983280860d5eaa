package hook

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"aipm/fsstore"
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
		line = strings.TrimSpace(line) // Codex trims a hunk's header too (and a CR)
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
// tool writes no file), and the denial to record. Paths are taken
// relative to the call's cwd, and checked as the files they are
// (fsstore's LeaseCheck: links, hard links, case and Unicode forms).
// Leases that cannot be read refuse the call: a lease must not lapse
// because a file is damaged.
func (h *Hook) leaseRefusal(in Input) (string, fsstore.Denial) {
	conflict, err := h.leaseConflict(in)
	switch {
	case err != nil:
		return fmt.Sprintf("aipm: the file leases cannot be read (%v), so no file may be written: ask a human to repair or remove %s", err, h.Store.Rel(h.Store.LeasesPath())),
			fsstore.Denial{Why: fsstore.DeniedUnreadable}
	case conflict == nil:
		return "", fsstore.Denial{}
	}
	return "aipm: " + conflict.Error() + ".", fsstore.Denial{Why: fsstore.DeniedLease, Holder: conflict.Lease.Holder, Path: conflict.Path}
}

// leaseConflict is leaseRefusal's check: the first lease that keeps in
// from running (nil when none does), or what kept it from reading.
func (h *Hook) leaseConflict(in Input) (*fsstore.LeaseConflictError, error) {
	files := writingTools[in.ToolName]
	if files == nil {
		return nil, nil
	}
	paths := files(in.ToolInput)
	if len(paths) == 0 {
		return nil, nil
	}
	names := make([]string, 0, len(paths))
	for _, p := range paths {
		if !filepath.IsAbs(p) && in.Cwd != "" {
			p = in.Cwd + string(filepath.Separator) + p // not cleaned: a ".." after a link is the link's target's parent
		}
		names = append(names, p)
	}
	blocked, err := h.Store.LeaseCheck(h.Agent, names)
	if err != nil || len(blocked) == 0 {
		return nil, err
	}
	return blocked[0], nil
}
