package fsstore

import (
	"aipm/fsstore/internal/storage"
	"context"
	"fmt"
)

// Unhand takes back every batch handed to session in agent's streams and
// not acknowledged yet: the response that carried it never reached the
// client (an HTTP connection that went away mid-call). Nothing is
// committed; the batch goes back behind the committed cursor, marked for
// redelivery, so the session's next read (or any later reader's) gets it
// again, marked redelivered. A batch the session acknowledged already is
// past the cursor and stays received. When the session was handed a later
// batch in between, that one is taken back too: it comes again, marked,
// never lost. With streams named, only the batches of those streams (and
// their sub-streams: a task session's per-task notifications stream with
// its purpose's) are taken back. It says whether it took anything back.
func (s *Store) Unhand(ctx context.Context, agent, session string, streams ...string) (bool, error) {
	cursorPath, err := s.files.ReadCursorPath(agent)
	if err != nil {
		return false, err
	}
	cursors, err := s.files.ReadCursors(cursorPath)
	if err != nil {
		return false, err
	}
	named := func(stream string, _ *storage.PendingBatch) bool {
		return len(streams) == 0 || storage.InStreams(stream, streams)
	}
	if !storage.HoldsBatchIn(cursors, session, named) {
		return false, nil
	}
	took := false
	_, err = storage.UpdateDoc(ctx, s.files, cursorPath, storage.ModeFile, func(cursors *storage.Cursors, _ bool) error {
		took = storage.HoldsBatchIn(*cursors, session, named) // each try of the swap decides anew
		if !took {
			return storage.ErrNoChange
		}
		for stream, sc := range *cursors {
			if sc.Pending == nil || sc.Pending.Session != session || !named(stream, sc.Pending) {
				continue
			}
			// startFor's rule for another session's batch, made now.
			p := sc.Pending
			if (sc.Cursor.Inode == 0 || p.To.Inode == sc.Cursor.Inode) && p.To.Offset > sc.Cursor.RedeliverBefore {
				sc.Cursor.RedeliverBefore = p.To.Offset
			}
			sc.Pending = nil
			(*cursors)[stream] = sc
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("take back what session %s was handed: %w", session, err)
	}
	return took, nil
}
