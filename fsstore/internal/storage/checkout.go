package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"aipm/internal/lockedfile"
)

// A checkout is one copy of a project's .ai-pm/ on disk. Read state
// (agents/<id>/read.json) is not kept in git, so a git clone of a used
// project would show every old message as unread. The gitignored marker
// local.json tells a checkout that has its read state from one that has
// not: Init writes it; when Open finds it missing, or written in another
// directory (its inode differs: a copy, or a marker committed by mistake),
// and the checkout holds none of the gitignored state aipm writes, the
// checkout is a clone, and every agent's read cursors are moved to the end
// of its chat and notification logs: history that predates the clone is
// read there. Messages that arrive after it are unread as usual.
//
// The move runs under local.lock, so of several processes opening a new
// clone at once one moves the cursors and the others find the marker
// written. The marker says "resetting" while the cursors move: a process
// killed midway leaves that, and the next Open finishes the move (the
// cursor writes are idempotent: each moves to the end of what is there).

// checkoutMarker is the content of local.json.
type checkoutMarker struct {
	// Inode is the inode of the .ai-pm directory the marker was written in.
	Inode uint64 `json:"inode"`
	// State is markerReady, or markerResetting while a clone's cursors move.
	State     string    `json:"state"`
	CreatedAt time.Time `json:"createdAt"`
}

const (
	markerReady     = "ready"
	markerResetting = "resetting"
)

func (l layout) localMarkerPath() string { return filepath.Join(l.root, "local.json") }
func (l layout) localLockPath() string   { return filepath.Join(l.root, "local.lock") }

// markerFits says whether the marker at path is ready and was written in
// the directory of inode ino.
func (s *Files) markerFits(ino uint64) (checkoutMarker, bool) {
	var m checkoutMarker
	if err := s.ReadDoc(s.localMarkerPath(), &m); err != nil {
		return checkoutMarker{}, false
	}
	return m, m.Inode == ino && m.State == markerReady
}

// openCheckout is Open's check of the checkout marker (see above); root is
// the stat of .ai-pm. A checkout aipm may not write (a read-only copy) is
// read as it is.
func (s *Files) openCheckout(root os.FileInfo) error {
	ino := lockedfile.Inode(root)
	if _, ok := s.markerFits(ino); ok {
		return nil // the common case: one small read
	}
	err := s.settleCheckout(context.Background(), ino)
	if errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS) {
		return nil
	}
	return err
}

// settleCheckout, under local.lock, decides what a checkout without a
// fitting marker is, moves a clone's cursors, and writes the marker.
func (s *Files) settleCheckout(ctx context.Context, ino uint64) error {
	unlock, err := lockedfile.Lock(ctx, s.localLockPath(), ModePrivateFile)
	if err != nil {
		return s.Failed("lock", s.localLockPath(), err)
	}
	defer unlock()
	m, ok := s.markerFits(ino)
	switch {
	case ok:
		return nil // another process settled it meanwhile
	case m.Inode == ino && m.State == markerResetting:
		// a move that was killed midway: finish it
	case s.hasLocalState():
		// A checkout made before aipm wrote markers, or moved to another
		// file system: its read state is its own.
		return s.writeMarker(ino, markerReady)
	default:
		if err := s.writeMarker(ino, markerResetting); err != nil {
			return err
		}
	}
	s.movedClone = true
	if err := s.markHistoryRead(ctx); err != nil {
		return fmt.Errorf("mark the history of this clone read: %w", err)
	}
	return s.writeMarker(ino, markerReady)
}

func (s *Files) writeMarker(ino uint64, state string) error {
	err := s.WriteDoc(s.localMarkerPath(), checkoutMarker{Inode: ino, State: state, CreatedAt: time.Now().UTC()}, ModeFile)
	if err != nil {
		return s.Failed("write", s.localMarkerPath(), err)
	}
	return nil
}

// hasLocalState says whether the checkout holds state that is never in
// git: read cursors, passkey hashes, sessions, credentials.
func (s *Files) hasLocalState() bool {
	for _, pattern := range []string{"agents/*/read.json", "agents/*/passkey.json", "sessions/*", "credentials/*"} {
		if m, _ := filepath.Glob(filepath.Join(s.root, pattern)); len(m) > 0 {
			return true
		}
	}
	return false
}

// markHistoryRead moves every agent's read cursors to the end of its chat
// and notification logs, one read.json write per agent.
func (s *Files) markHistoryRead(ctx context.Context) error {
	entries, err := os.ReadDir(s.AgentsDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.IsDir() || CheckAgentID(e.Name()) != nil {
			continue
		}
		if err := s.cursorsToEnd(ctx, e.Name()); err != nil {
			return err
		}
	}
	return nil
}

// cursorsToEnd sets agent's cursors to the end of its logs: the chat
// cursor, and the notification cursors of both purposes. Each read starts
// at the cursor already there, so finishing a move reads only the rest.
func (s *Files) cursorsToEnd(ctx context.Context, agent string) error {
	chat, err := s.ChatPath(agent)
	if err != nil {
		return err
	}
	notes, err := s.NotificationsPath(agent)
	if err != nil {
		return err
	}
	cursorPath, err := s.ReadCursorPath(agent)
	if err != nil {
		return err
	}
	none := ReadOptions{ReadOptions: lockedfile.ReadOptions{Match: func(Record) bool { return false }}}
	_, err = UpdateDoc(ctx, s, cursorPath, ModeFile, func(cursors *Cursors, _ bool) error {
		_, chatEnd, err := s.readPast(chat, CursorOf(*cursors, StreamChat).Cursor, none)
		if err != nil {
			return err
		}
		_, notesEnd, err := s.readPast(notes, CursorOf(*cursors, StreamNotifications).Cursor, none)
		if err != nil {
			return err
		}
		after := Cursors{StreamChat: {Cursor: chatEnd}}
		if notesEnd.Offset > 0 {
			for _, stream := range []string{StreamNotifications, NotificationStream(PurposeTask), NotificationStream(PurposeChat)} {
				after[stream] = StreamCursor{Cursor: notesEnd}
			}
		}
		if chatEnd.Offset == 0 && notesEnd.Offset == 0 {
			return ErrNoChange // nothing written to this agent yet
		}
		*cursors = after
		return nil
	})
	if err != nil {
		return fmt.Errorf("agent %s: %w", agent, err)
	}
	return nil
}

// WriteInitMarker writes the marker of a new project into its tree, dir,
// before Init renames it into place (the rename keeps the inode).
func WriteInitMarker(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(checkoutMarker{Inode: lockedfile.Inode(fi), State: markerReady, CreatedAt: time.Now().UTC()}, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(filepath.Join(dir, "local.json"), append(data, '\n'), ModeFile, true)
}
