package fsstore

// TaskDeps is what the dependency rules make of one task (DESIGN section
// 20): what it waits for, whether it is ready, and the open tasks that
// wait for it now (as a blocker not done, or as a subtask of theirs that
// someone else has).
type TaskDeps struct {
	Waits    []Wait
	Ready    bool
	WaitedBy []string
}

// TaskDeps says, for each of the tasks ids, its TaskDeps, judged in one
// look at the task index, so that a list of many tasks costs one (aipm
// task list and show, the board). A task whose file is gone, or cannot be
// read, waits for nothing and is not ready.
func (s *Store) TaskDeps(ids []string) (map[string]TaskDeps, error) {
	ix := &s.caches.tasks
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := s.refreshTasks(ix); err != nil {
		return nil, err
	}
	out := make(map[string]TaskDeps, len(ids))
	for _, id := range ids {
		var d TaskDeps
		if e := ix.entry(id); e != nil && e.err == nil {
			d.Waits, d.Ready = ix.waitsOf(e), ix.ready(e)
		}
		out[id] = d
	}
	for _, e := range ix.open {
		for _, w := range ix.waitsOf(e) {
			if d, ok := out[w.TaskID]; ok {
				d.WaitedBy = append(d.WaitedBy, e.id)
				out[w.TaskID] = d
			}
		}
	}
	return out, nil
}
