package fsstore

import (
	"errors"
	"slices"
	"time"

	"aipm/fsstore/internal/storage"
	"aipm/internal/lockedfile"
)

// liveSessions returns agent's sessions of purpose ("": of any) that are
// live at now and whose aipm serve process runs, read without a lock or a
// sweep, and without what their models were told (LiveSessionsOf adds
// it): what ReceiverStateOf needs, at every send. The index and each
// document cost a stat while they are the ones this process read last; a
// session of another purpose costs no more (its process is not asked
// after).
func (s *Store) liveSessions(agent, purpose string, now time.Time) ([]Session, error) {
	ids, err := s.agentSessionIDs(agent)
	if err != nil {
		return nil, err
	}
	var live []Session
	for _, id := range ids {
		ses, err := s.session(id)
		if err != nil {
			continue // gone, or damaged: doctor reports it
		}
		if purpose != "" && ses.Purpose != purpose {
			continue
		}
		if ses.Alive(now) && ses.Agent == agent {
			live = append(live, ses)
		}
	}
	return live, nil
}

// agentSessionIDs reads agent's session index, reusing the ids this
// process read last while one stat says the file is the same one (the
// index is replaced by rename, never edited in place: a new version is a
// new inode; but it is removed when the agent has no session and written
// again later, so what was read within Racy's window is not kept). The
// caller may change what it gets.
func (s *Store) agentSessionIDs(agent string) ([]string, error) {
	path, err := s.sessionIndexPath(agent)
	if err != nil {
		return nil, err
	}
	seen := time.Now() // the index is removed and written again: PutSeen
	stamp, statErr := lockedfile.StampPath(path)
	if statErr == nil {
		if ids, ok := s.caches.sessionIndex.Get(path, stamp); ok {
			return slices.Clone(ids), nil
		}
	}
	var ix agentSessionIndex
	if err := s.files.ReadDoc(path, &ix); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return nil, err
	}
	if statErr == nil {
		// Read after the stat: a version written in between is newer than
		// the stamp says, and the next stat misses and reads it again.
		s.caches.sessionIndex.PutSeen(path, slices.Clone(ix.Sessions), seen, stamp)
	}
	return ix.Sessions, nil
}
