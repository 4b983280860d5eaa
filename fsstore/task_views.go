package fsstore

// TaskWaits says, for each of tasks by its id, what it waits for and
// whether it is ready (DESIGN section 20), judged in one look at the task
// index, so that a list of many tasks costs one (aipm task list --waiting,
// task show). A task whose file is gone, or cannot be read, waits for
// nothing and is not ready.
func (s *Store) TaskWaits(tasks []Task) (waits map[string][]Wait, ready map[string]bool, err error) {
	ix := &s.caches.tasks
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := s.refreshTasks(ix); err != nil {
		return nil, nil, err
	}
	waits, ready = make(map[string][]Wait, len(tasks)), make(map[string]bool, len(tasks))
	for _, t := range tasks {
		if e, ok := ix.entries[t.ID]; ok && e.err == nil {
			waits[t.ID], ready[t.ID] = ix.waitsOf(e), ix.ready(e)
		}
	}
	return waits, ready, nil
}
