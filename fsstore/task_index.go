package fsstore

import (
	"aipm/fsstore/internal/storage"
	"aipm/internal/lockedfile"
	"bytes"
	"errors"
	"fmt"

	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
)

// A DirWatcher tells of changes to the files of one directory: changed gets
// the base name of a file that changed, or "" when events were lost and any
// file may have changed. A long-running process (aipm serve) gives the
// store one (WatchTasks), so that its task index learns of tasks edited in
// place without a stat of every task file per call.
type DirWatcher interface {
	WatchDir(dir string, changed func(name string)) (stop func(), err error)
}

// WatchTasks makes the task index of this store follow in-place edits of
// task files through w (an edit is seen once its event arrives), instead
// of a stat of every task file on each use; nil stops the watch. Files created, replaced by a
// rename (aipm's own writes, an editor's save) or removed are seen by the
// next call whether or not a watcher is given.
func (s *Store) WatchTasks(w DirWatcher) {
	ix := &s.caches.tasks
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.stop != nil {
		ix.stop()
		ix.stop = nil
	}
	ix.watcher = w
}

// taskIndex is what this process knows of tasks/ (DESIGN section 3): for
// each task file, the fields the filters need and the stamp of the version
// they were read from. It is derived from the files and checked against
// them on every use, never trusted on its own, and never written anywhere:
//
//   - one stat of the directory says whether a file was created, removed or
//     replaced by a rename (every aipm write, an editor's rename-save); if
//     so, the directory is listed with its inode numbers and only new or
//     replaced files are read;
//   - an edit in place keeps the name and the inode: the DirWatcher's event
//     marks the task dirty (a lost event marks all), or, without a watcher,
//     every known file is stat'ed;
//   - a document a caller returns is read again from its file, and the
//     filter is checked against what was read.
//
// The first use in a process reads every task file once.
type taskIndex struct {
	mu      sync.Mutex
	built   bool
	dir     lockedfile.Stamp // of tasks/ when it was last listed
	dirRacy bool             // that stamp was too recent to prove the listing current
	// order is every entry, newest first (ids sort by creation time): a
	// lookup by id is a binary search of it (entry), without a map of
	// 10^4 ids beside it. Entries read since it was sorted wait in added,
	// and those whose file is gone are marked, until settle.
	order      []*taskEntry
	added      []*taskEntry
	pruned     bool                          // some entries of order are gone
	kinds      map[taskFieldsKey]*taskFields // the fields entries share (share)
	open       []*taskEntry                  // the entries of open tasks, newest first
	bad        []error                       // the entries' errors, newest first
	claimable  []*taskEntry                  // ready tasks nobody is assigned, in claimOrder
	loops      [][]string                    // the dependency cycles (cycles), when loopsKnown
	loopsKnown bool
	children   map[string][]*taskEntry // each parent's subtasks, newest first
	derived    bool                    // open and bad are up to date with order
	buf        bytes.Buffer            // reused for reading task files
	watcher    DirWatcher
	stop       func()
	watching   uint64 // inode of the tasks directory being watched

	evMu  sync.Mutex // taken by the watcher's callback: never held during I/O
	dirty map[string]bool
	lost  bool
}

// taskEntry is one task file in the index: 64 bytes, its fields shared
// with the tasks whose fields are the same (10^4 tasks are mostly done,
// of a few assignees: a few hundred kinds), so that the index of 10^4
// tasks holds about 1 MB, not 3.3 (DESIGN section 13, P5).
type taskEntry struct {
	id          string
	stamp       taskStamp
	racy        bool // read within racy's window of its mtime: look again
	listed      bool // seen by the listing under way (relistTasks)
	gone        bool // its file is gone: settle drops it
	*taskFields      // never nil, never changed in place: shared (share)
}

// taskFields are what the index keeps of a task document: the fields the
// filters and the dependency rules read.
type taskFields struct {
	status, assignee, parentID string
	flow                       taskFlowFields
	err                        error // the document could not be read or decoded
}

// taskFieldsKey is the comparable part of taskFields: the fields of the
// tasks that share one (share).
type taskFieldsKey struct {
	status, assignee, parentID, approval, group, priority, stop, stopTold string
	startedReady                                                          bool
}

// taskStamp is the lockedfile.Stamp of a task file in 24 bytes (its
// modification time in Unix nanoseconds, without a location).
type taskStamp struct {
	ino         uint64
	size, mtime int64
}

func stampOf(st lockedfile.Stamp) taskStamp {
	if st == (lockedfile.Stamp{}) {
		return taskStamp{} // a missing file matches an entry never stamped, as before
	}
	return taskStamp{ino: st.Ino, size: st.Size, mtime: st.MTime.UnixNano()}
}

// share returns the fields to keep for f: the ones already kept when an
// entry has the same (those with blockers or an error are kept apart).
// The kinds are forgotten when there are many more of them than entries
// could share (edits leave old ones behind): entries keep theirs, and the
// next ones start sharing anew.
func (ix *taskIndex) share(f taskFields) *taskFields {
	if f.err != nil || len(f.flow.blockedBy) > 0 {
		return &f
	}
	k := taskFieldsKey{status: f.status, assignee: f.assignee, parentID: f.parentID, approval: f.flow.approval, group: f.flow.group,
		priority: f.flow.priority, stop: f.flow.stop, stopTold: f.flow.stopTold, startedReady: f.flow.startedReady}
	if p, ok := ix.kinds[k]; ok {
		return p
	}
	if ix.kinds == nil || len(ix.kinds) > 64+len(ix.order)/8 {
		ix.kinds = map[taskFieldsKey]*taskFields{}
	}
	p := &f
	ix.kinds[k] = p
	return p
}

// same says whether two entries' fields are the same.
func (f *taskFields) same(g *taskFields) bool {
	return f == g || (f.status == g.status && f.err == g.err && f.parentID == g.parentID && f.assignee == g.assignee && f.flow.equal(g.flow))
}

// taskFlowFields are the fields of a task the dependency rules read
// across tasks (task_deps.go): kept in the index, so that readiness and
// cycles are judged without reading every task file.
type taskFlowFields struct {
	approval, group, priority string
	blockedBy                 []string
	startedReady              bool
	stop, stopTold            string // the stop this status is (stopKey), and the one told
}

// flowFieldsOf is what the index keeps of t's flow fields.
func flowFieldsOf(t Task) taskFlowFields {
	return taskFlowFields{approval: t.ApprovalStatus, group: t.Group, priority: t.Priority, blockedBy: t.BlockedBy, startedReady: t.StartedReady,
		stop: stopKey(t.Status, t.StatusChangedAt), stopTold: t.StopTold}
}

func (e *taskEntry) matches(f TaskFilter) bool {
	return e.err == nil && taskMatches(f, e.status, e.assignee, e.parentID)
}

func taskMatches(f TaskFilter, status, assignee, parentID string) bool {
	return (f.Status == "" || status == f.Status) && (f.Assignee == "" || assignee == f.Assignee) &&
		(f.ParentID == "" || parentID == f.ParentID) && (!f.Open || StatusOpen(status))
}

func (ix *taskIndex) changed(name string) {
	ix.evMu.Lock()
	defer ix.evMu.Unlock()
	if name == "" {
		ix.lost = true
		return
	}
	if id, ok := strings.CutSuffix(name, ".json"); ok {
		if ix.dirty == nil {
			ix.dirty = map[string]bool{}
		}
		ix.dirty[id] = true
	}
}

// takeEvents returns the ids marked dirty since the last call, and whether
// events were lost.
func (ix *taskIndex) takeEvents() (map[string]bool, bool) {
	ix.evMu.Lock()
	defer ix.evMu.Unlock()
	d, lost := ix.dirty, ix.lost
	ix.dirty, ix.lost = nil, false
	return d, lost
}

// readTask reads a task document and the stamp of the version read (taken
// from the open file before reading, so a later change makes it differ).
func (s *Store) readTask(path string, t *Task) (lockedfile.Stamp, error) {
	f, err := lockedfile.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return lockedfile.Stamp{}, fmt.Errorf("read %s: %w", s.files.Rel(path), storage.ErrNotFound)
	}
	if err != nil {
		return lockedfile.Stamp{}, s.files.Failed("read", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return lockedfile.Stamp{}, s.files.Failed("read", path, err)
	}
	var data bytes.Buffer
	if err := lockedfile.ReadBounded(f, &data); err != nil {
		return lockedfile.Stamp{}, s.files.Failed("read", path, err)
	}
	return lockedfile.StampOf(fi), storage.DecodeDoc(s.files.Rel(path), data.Bytes(), t)
}

// summarize reads the fields the filters need from a task document without
// decoding all of it; a document that is not valid JSON, or has one of
// those fields of the wrong type, is reported as decodeDoc reports it.
func summarize(rel string, data []byte) taskFields {
	if gjson.ValidBytes(data) && isObject(data) {
		f := gjson.GetManyBytes(data, "status", "assignee", "parentId", "aipmStatus", "approvalStatus", "group", "statusChangedAt", "stopTold", "priority", "blockedBy", "startedReady")
		ok := true
		for _, r := range f[:9] {
			ok = ok && (!r.Exists() || r.Type == gjson.String || r.Type == gjson.Null)
		}
		blockers, blockersOK := stringArray(f[9])
		if ok && blockersOK && (!f[10].Exists() || f[10].IsBool() || f[10].Type == gjson.Null) {
			e := taskFields{status: intern(f[0].Str), assignee: intern(f[1].Str), parentID: f[2].Str}
			if !handEditAllowed(f[0].Str, f[3].Str, f[4].Str) {
				e.status = intern(f[3].Str) // as Task.Settle: the last valid status
			}
			e.flow = taskFlowFields{approval: intern(f[4].Str), group: intern(f[5].Str), priority: intern(f[8].Str), blockedBy: blockers,
				startedReady: f[10].Bool(), stop: stopKey(e.status, f[6].Time()), stopTold: f[7].Str}
			return e
		}
	}
	var t Task
	if err := storage.DecodeDoc(rel, data, &t); err != nil {
		return taskFields{err: err}
	}
	return taskFields{status: t.Status, assignee: t.Assignee, parentID: t.ParentID, flow: flowFieldsOf(t)}
}

// isObject says whether valid JSON is an object (as gjson's IsObject, without
// its copy of the document).
func isObject(data []byte) bool {
	data = bytes.TrimLeft(data, " \t\r\n")
	return len(data) > 0 && data[0] == '{'
}

// equal says whether two entries' flow fields are the same.
func (f taskFlowFields) equal(g taskFlowFields) bool {
	return f.approval == g.approval && f.group == g.group && f.priority == g.priority && f.startedReady == g.startedReady &&
		f.stop == g.stop && f.stopTold == g.stopTold && slices.Equal(f.blockedBy, g.blockedBy)
}

// stringArray reads r as a JSON array of strings (absent or null: none);
// false if it is something else.
func stringArray(r gjson.Result) ([]string, bool) {
	if !r.Exists() || r.Type == gjson.Null {
		return nil, true
	}
	if !r.IsArray() {
		return nil, false
	}
	var out []string
	ok := true
	r.ForEach(func(_, v gjson.Result) bool {
		ok = v.Type == gjson.String
		out = append(out, v.Str)
		return ok
	})
	return out, ok
}

// intern shares the few distinct statuses and assignees among entries.
func intern(s string) string {
	if v, ok := interned.Load(s); ok {
		return v.(string)
	}
	if len(s) > 64 {
		return strings.Clone(s)
	}
	v, _ := interned.LoadOrStore(strings.Clone(s), strings.Clone(s))
	return v.(string)
}

var interned sync.Map

// indexTask reads the task file of id into the index (or drops it if gone).
func (s *Store) indexTask(ix *taskIndex, id string) {
	path := filepath.Join(s.files.CollectionDir(storage.Tasks), id+".json")
	var stamp lockedfile.Stamp
	seen := time.Now() // before the stat: Racy judges the stamp at it
	err := func() error {
		f, err := lockedfile.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		stamp = lockedfile.StampOf(fi)
		ix.buf.Reset()
		if err := lockedfile.ReadBounded(f, &ix.buf); err != nil {
			return err
		}
		return nil
	}()
	if errors.Is(err, os.ErrNotExist) {
		if old := ix.entry(id); old != nil && !old.gone {
			old.gone, ix.pruned = true, true
		}
		return
	}
	var fields taskFields
	if err != nil {
		fields.err = s.files.Failed("read", path, err)
	} else {
		fields = summarize(s.files.Rel(path), ix.buf.Bytes())
	}
	if ix.buf.Cap() > 1<<20 {
		ix.buf = bytes.Buffer{} // one huge file: do not keep its buffer
	}
	e := taskEntry{id: id, stamp: stampOf(stamp), racy: lockedfile.Racy(stamp.MTime, seen), taskFields: ix.share(fields)}
	if old := ix.entry(id); old != nil {
		if old.gone || !old.same(e.taskFields) {
			ix.derived = false
		}
		*old = e // in place: ix.order holds it
		return
	}
	ix.added = append(ix.added, &e)
}

// newestFirst is the order of ix.order.
func newestFirst(a, b *taskEntry) int { return strings.Compare(b.id, a.id) }

// entry is the entry of id in order, nil if none: a binary search that
// keeps id to itself, so that the listing's lookup of each name copies
// none of them to the heap.
func (ix *taskIndex) entry(id string) *taskEntry {
	lo, hi := 0, len(ix.order)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch at := ix.order[m].id; {
		case at == id:
			return ix.order[m]
		case at > id:
			lo = m + 1 // a newer one: id is further on
		default:
			hi = m
		}
	}
	return nil
}

// settle drops the entries whose file is gone from order and sorts in
// the ones added: a few one by one, many at once.
func (ix *taskIndex) settle() {
	if ix.pruned {
		ix.order = slices.DeleteFunc(ix.order, func(e *taskEntry) bool { return e.gone })
		ix.pruned, ix.derived = false, false
	}
	switch {
	case len(ix.added) == 0:
		return
	case len(ix.order) == 0:
		ix.order = ix.added
		slices.SortFunc(ix.order, newestFirst)
	case len(ix.added) <= 8:
		for _, e := range ix.added {
			i, _ := slices.BinarySearchFunc(ix.order, e, newestFirst)
			ix.order = slices.Insert(ix.order, i, e)
		}
	default:
		ix.order = append(ix.order, ix.added...)
		slices.SortFunc(ix.order, newestFirst)
	}
	ix.added, ix.derived = nil, false
}

// refreshTasks brings the index up to date with tasks/ (ix.mu held).
func (s *Store) refreshTasks(ix *taskIndex) error {
	dir := s.files.CollectionDir(storage.Tasks)
	if ix.watcher != nil {
		if err := s.watchTasksDir(ix, dir); err != nil {
			return err
		}
	}
	dirty, lost := ix.takeEvents()
	seen := time.Now() // before the stat: Racy judges the stamp at it
	fi, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		ix.order, ix.added, ix.dir, ix.built, ix.derived = nil, nil, lockedfile.Stamp{}, true, false
		ix.derive()
		return nil
	}
	if err != nil {
		return fmt.Errorf("list tasks: %w", err)
	}
	relisted := false
	if stamp := lockedfile.StampOf(fi); !ix.built || stamp != ix.dir || ix.dirRacy {
		if err := s.relistTasks(ix, dir, stamp, seen, dirty); err != nil {
			return err
		}
		relisted = true
	}
	s.recheckEdits(ix, dir, dirty, lost, relisted)
	ix.settle()
	ix.derive()
	return nil
}

// relistTasks lists tasks/ (stamped stamp at statAt, both taken before the
// listing: a change during it stamps the directory later, and the next
// call lists again) and indexes the files that are new or were replaced by
// a rename, as it meets them; those need no other look (they leave dirty).
func (s *Store) relistTasks(ix *taskIndex, dir string, stamp lockedfile.Stamp, statAt time.Time, dirty map[string]bool) error {
	err := lockedfile.ReadDirInodes(dir, func(name []byte, ino uint64) {
		id, ok := bytes.CutSuffix(name, []byte(".json"))
		if !ok {
			return
		}
		if e := ix.entry(string(id)); e != nil {
			if e.stamp.ino != ino {
				s.indexTask(ix, e.id) // replaced by a rename
				delete(dirty, e.id)
			}
			e.listed = true
			return
		}
		sid := string(id)
		if storage.CheckID(storage.PrefixTask, sid) != nil {
			return
		}
		s.indexTask(ix, sid) // new: added
		delete(dirty, sid)
	})
	if err != nil {
		return fmt.Errorf("list tasks: %w", err)
	}
	for _, e := range ix.order {
		if !e.listed {
			e.gone, ix.pruned = true, true
		}
		e.listed = false
	}
	ix.settle()
	ix.dir, ix.dirRacy, ix.built = stamp, lockedfile.Racy(stamp.MTime, statAt), true
	return nil
}

// recheckEdits looks again at files edited in place: the ids the watcher
// named, or, without one (or after lost events), every file by its stamp.
func (s *Store) recheckEdits(ix *taskIndex, dir string, dirty map[string]bool, lost, relisted bool) {
	check := func(e *taskEntry) {
		if e.racy {
			s.indexTask(ix, e.id)
			return
		}
		cur, err := lockedfile.StampPath(filepath.Join(dir, e.id+".json"))
		if err != nil || stampOf(cur) != e.stamp {
			s.indexTask(ix, e.id)
		}
	}
	if ix.watcher == nil || ix.stop == nil || lost {
		for _, e := range ix.order { // a gone one is marked, not dropped: order holds still
			check(e)
		}
		return
	}
	for id := range dirty {
		if e := ix.entry(id); e != nil {
			check(e)
		} else if !relisted && storage.CheckID(storage.PrefixTask, id) == nil {
			s.indexTask(ix, id) // created: the listing above will agree
		}
	}
}

// derive rebuilds what the index keeps beside its entries (settled), when
// they changed: the open tasks, the problems, the subtasks and the
// claimable tasks.
func (ix *taskIndex) derive() {
	if ix.derived {
		return
	}
	ix.open, ix.bad = ix.open[:0], ix.bad[:0]
	clear(ix.children)
	for _, e := range ix.order {
		if e.err == nil && e.parentID != "" {
			if ix.children == nil {
				ix.children = map[string][]*taskEntry{}
			}
			ix.children[e.parentID] = append(ix.children[e.parentID], e)
		}
		switch {
		case e.err != nil:
			ix.bad = append(ix.bad, e.err)
		case StatusOpen(e.status):
			ix.open = append(ix.open, e)
		}
	}
	ix.claimable = ix.claimable[:0]
	for _, e := range ix.open {
		if e.assignee == "" && ix.ready(e) {
			ix.claimable = append(ix.claimable, e)
		}
	}
	slices.SortFunc(ix.claimable, claimOrder)
	ix.loops, ix.loopsKnown = nil, false
	ix.derived = true
}

// watchTasksDir (re)starts the watch of tasks/ when it is not watched yet
// or is another directory now; events must flow before the files are read.
// A missing directory is watched once it exists.
func (s *Store) watchTasksDir(ix *taskIndex, dir string) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list tasks: %w", err)
	}
	ino := lockedfile.StampOf(fi).Ino
	if ix.stop != nil && ix.watching == ino {
		return nil
	}
	if ix.stop != nil {
		ix.stop()
		ix.stop = nil
	}
	stop, err := ix.watcher.WatchDir(dir, ix.changed)
	if err != nil {
		return nil // no watch: every known file is stat'ed instead
	}
	ix.stop, ix.watching = stop, ino
	if ix.built {
		ix.changed("") // edits made while nothing watched: check every file once
	}
	return nil
}

// taskCandidates returns, newest first, up to n (0: all) ids older than
// after ("": from the newest) whose indexed fields match f, and the
// problems of the task files that could not be read. A filter that only
// open tasks can match looks at those only.
func (s *Store) taskCandidates(f TaskFilter, after string, n int) ([]string, []error, error) {
	ix := &s.caches.tasks
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := s.refreshTasks(ix); err != nil {
		return nil, nil, err
	}
	list := ix.order
	if f.Open || f.Ready || f.Waiting || (f.Status != "" && StatusOpen(f.Status)) {
		list = ix.open
	}
	if after != "" {
		i, _ := slices.BinarySearchFunc(list, after, func(e *taskEntry, id string) int { return strings.Compare(id, e.id) })
		for i < len(list) && list[i].id >= after {
			i++
		}
		list = list[i:]
	}
	var ids []string
	for _, e := range list {
		if n > 0 && len(ids) == n {
			break
		}
		if e.matches(f) && (!f.Unassigned || e.assignee == "") && (!f.Ready || ix.ready(e)) && (!f.Waiting || ix.waiting(e)) {
			ids = append(ids, e.id)
		}
	}
	return ids, slices.Clone(ix.bad), nil
}

// recheckTask marks id for a look at its file on the next use of the index:
// a caller read a version of it that the index has not summarised.
func (s *Store) recheckTask(id string) { s.caches.tasks.changed(id + ".json") }
