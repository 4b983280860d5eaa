package fsstore

import (
	"errors"
	"maps"
	"slices"
	"time"

	"aipm/fsstore/internal/storage"
	"aipm/internal/lockedfile"
)

// keptConvIndex is readConvIndex for conversationsOf, which takes no lock
// and runs at every send between AI agents and every get_next_action: what
// it read is reused while stats say it would read the same. The index is
// replaced by rename (a new version is a new inode). Without an index the
// documents are the index: it is reused while the directory is unchanged,
// and the first conversation aipm starts writes the index. A damaged index
// is read again every time (rebuilt from the documents, as readConvIndex
// does). What it returns is the caller's to change.
func (s *Store) keptConvIndex() (convIndex, error) {
	path := s.convIndexPath()
	seen := time.Now() // the directory is not lockedfile's: PutSeen
	stamps, cacheable := s.convIndexStamps(path)
	if cacheable {
		if idx, ok := s.caches.convIndex.Get(path, stamps...); ok {
			return idx.clone(), nil
		}
	}
	var idx convIndex
	err := s.files.ReadDoc(path, &idx)
	var le *storage.LineError
	switch {
	case errors.Is(err, storage.ErrNotFound):
		idx, err = s.rebuildConvIndex()
	case errors.As(err, &le):
		idx, err = s.rebuildConvIndex()
		cacheable = false
	case err == nil && idx.Pairs == nil:
		idx.Pairs = map[string][]string{}
	}
	if err == nil && cacheable {
		// Read after the stats: a version written in between is newer than
		// the stamps say, and the next look reads it again.
		s.caches.convIndex.PutSeen(path, idx.clone(), seen, stamps...)
	}
	return idx, err
}

// convIndexStamps are the stamps keptConvIndex revalidates by: the index,
// or, when there is none, the conversations directory.
func (s *Store) convIndexStamps(path string) ([]lockedfile.Stamp, bool) {
	ix, err := lockedfile.StampPath(path)
	if err != nil {
		return nil, false
	}
	if ix != (lockedfile.Stamp{}) {
		return []lockedfile.Stamp{ix}, true
	}
	dir, err := lockedfile.StampPath(s.files.CollectionDir(storage.Conversations))
	if err != nil {
		return nil, false
	}
	return []lockedfile.Stamp{ix, dir}, true
}

// clone is a copy of idx that shares nothing with it.
func (idx convIndex) clone() convIndex {
	out := convIndex{Pairs: maps.Clone(idx.Pairs), Last: maps.Clone(idx.Last)}
	for k, ids := range out.Pairs {
		out.Pairs[k] = slices.Clone(ids)
	}
	if out.Pairs == nil {
		out.Pairs = map[string][]string{}
	}
	return out
}
