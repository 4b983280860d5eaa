package hook

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"aipm/fsstore"
	"aipm/internal/clients"
)

// writingTool is how the file-writing tool name names its files (nil: it
// writes none): the hook's client's own tools first, then any other
// client's, as the hook has always taken every client's writing tools
// (a tool named as another client's writer is taken for one).
func (h *Hook) writingTool(name string) func(json.RawMessage) []string {
	if files := h.dialect().WritingTools[name]; files != nil {
		return files
	}
	for _, n := range clients.Names() {
		c, _ := clients.Get(n)
		if files := c.Hooks.WritingTools[name]; files != nil {
			return files
		}
	}
	return nil
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
	files := h.writingTool(in.ToolName)
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
