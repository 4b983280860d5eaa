// Package wake lets one process wait for changes to files under .ai-pm/
// through a single fsnotify watcher, shared by every waiter: `aipm serve`
// uses it for get_next_action and its task index, `aipm log --follow` and
// `aipm status --watch` for following, the bench for its probes. Events are
// hints and files are the truth: a woken reader re-reads from its cursor.
package wake

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Hub shares one fsnotify watcher among every waiter of a process (each
// watcher is an inotify instance, and instances are limited per user). A
// directory is watched while someone subscribes to it, and for linger after
// the last one leaves: an agent calls get_next_action again and again, and
// neither its next wait nor the answer of its last should pay for removing
// and adding the same watches.
type Hub struct {
	mu   sync.Mutex
	fsw  *fsnotify.Watcher
	subs map[string]map[*Subscription]bool // directory -> subscribers
	idle map[string]time.Time              // watched directory nobody subscribes to -> since when
	reap *time.Timer                       // removes the watches idle for linger
	err  error                             // why fsnotify is unavailable
}

// linger is how long a directory stays watched after its last subscriber.
var linger = 30 * time.Second

// New returns a Hub; the fsnotify watcher starts at the first Subscribe.
func New() *Hub {
	return &Hub{subs: map[string]map[*Subscription]bool{}, idle: map[string]time.Time{}}
}

// Subscription receives a signal on C whenever a file it asked for changes.
// C has room for one signal: several changes before a receive coalesce.
type Subscription struct {
	C    chan struct{}
	w    *Hub
	dirs []string
	// names holds, per watched directory, the base names of interest; a nil
	// set means any non-dot file of that directory.
	names map[string]map[string]bool
	// changed, when set, is told each changed file's name instead of a
	// signal on C ("" when events were lost).
	changed func(name string)
}

// pollEvery is the fallback when fsnotify cannot be used (no inotify, or
// the per-user limit reached): waiters are woken on this period instead.
const pollEvery = 100 * time.Millisecond

// Subscribe watches the given targets by watching directories, which must
// exist. A target that is a directory stands for every file in it; any
// other target is a file (it need not exist yet) watched through its
// directory. Close the subscription when done.
func (w *Hub) Subscribe(targets ...string) (*Subscription, error) {
	sub := &Subscription{C: make(chan struct{}, 1), w: w, names: map[string]map[string]bool{}}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fsw == nil && w.err == nil {
		fsw, err := fsnotify.NewWatcher()
		if err != nil {
			w.err = fmt.Errorf("fsnotify unavailable, polling every %s (raise fs.inotify.max_user_instances): %w", pollEvery, err)
		} else {
			w.fsw = fsw
			go w.loop(fsw)
		}
	}
	for _, f := range targets {
		dir := filepath.Dir(f)
		if fi, err := os.Stat(f); err == nil && fi.IsDir() {
			dir = filepath.Clean(f)
			sub.names[dir] = nil // every file
		} else if names, seen := sub.names[dir]; !seen || names != nil {
			if names == nil {
				names = map[string]bool{}
				sub.names[dir] = names
			}
			names[filepath.Base(f)] = true
		}
		if w.subs[dir] == nil {
			// A lingering watch is added again too: the directory may have
			// been removed and made anew since, which ends its watch.
			delete(w.idle, dir)
			if w.fsw != nil {
				if err := w.fsw.Add(dir); err != nil {
					w.unsubscribeLocked(sub)
					return nil, fmt.Errorf("watch %s: %w (if it says no space left on device, raise fs.inotify.max_user_watches)", dir, err)
				}
			}
			w.subs[dir] = map[*Subscription]bool{}
		}
		if !w.subs[dir][sub] {
			w.subs[dir][sub] = true
			sub.dirs = append(sub.dirs, dir)
		}
	}
	if w.fsw == nil {
		go sub.poll()
	}
	return sub, nil
}

// WatchDir calls changed with the base name of every non-dot file of dir
// that changes, and with "" when events were lost, until stop is called
// (fsstore's DirWatcher: the task index learns of edits in place). It
// fails when fsnotify is unavailable; there is no polling form.
func (w *Hub) WatchDir(dir string, changed func(name string)) (stop func(), err error) {
	sub, err := w.Subscribe(dir)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fsw == nil {
		w.unsubscribeLocked(sub)
		return nil, w.err
	}
	sub.changed = changed
	return sub.Close, nil
}

func (s *Subscription) poll() {
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for range t.C {
		s.w.mu.Lock()
		closed := len(s.dirs) == 0
		s.w.mu.Unlock()
		if closed {
			return
		}
		s.signal()
	}
}

func (s *Subscription) notify(name string) {
	if s.changed != nil {
		s.changed(name)
		return
	}
	s.signal()
}

func (s *Subscription) signal() {
	select {
	case s.C <- struct{}{}:
	default:
	}
}

// Close ends the hub's fsnotify watcher, and with it every watch and
// subscription, for a process about to exit: the kernel's teardown of
// live watches then runs while the process still has work to overlap it
// with, instead of in its exit. The hub is not used afterwards.
func (w *Hub) Close() error {
	w.mu.Lock()
	fsw := w.fsw
	w.fsw, w.err = nil, errors.New("closed")
	if w.reap != nil {
		w.reap.Stop()
	}
	w.mu.Unlock()
	if fsw == nil {
		return nil
	}
	return fsw.Close()
}

// Close stops the subscription; directories nobody watches any more are
// removed from the watcher after linger.
func (s *Subscription) Close() {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	s.w.unsubscribeLocked(s)
}

func (w *Hub) unsubscribeLocked(s *Subscription) {
	for _, dir := range s.dirs {
		delete(w.subs[dir], s)
		if len(w.subs[dir]) == 0 {
			delete(w.subs, dir)
			if w.fsw != nil {
				w.idle[dir] = time.Now()
				if w.reap == nil {
					w.reap = time.AfterFunc(linger, w.removeIdle)
				}
			}
		}
	}
	s.dirs = nil
}

// removeIdle removes the watches that nobody has wanted for linger.
func (w *Hub) removeIdle() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reap = nil
	next := time.Duration(0)
	for dir, since := range w.idle {
		if left := linger - time.Since(since); left > 0 {
			if next == 0 || left < next {
				next = left
			}
			continue
		}
		delete(w.idle, dir)
		w.fsw.Remove(dir) // may fail if the directory is gone; nothing to do
	}
	if next > 0 {
		w.reap = time.AfterFunc(next, w.removeIdle)
	}
}

func (w *Hub) loop(fsw *fsnotify.Watcher) {
	for {
		select {
		case ev, ok := <-fsw.Events:
			if !ok {
				return
			}
			name := filepath.Base(ev.Name)
			if strings.HasPrefix(name, ".") { // .lock, .x.tmp-*: our own plumbing
				continue
			}
			dir := filepath.Dir(ev.Name)
			w.mu.Lock()
			for sub := range w.subs[dir] {
				if names := sub.names[dir]; names == nil || names[name] {
					sub.notify(name)
				}
			}
			w.mu.Unlock()
		case err, ok := <-fsw.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) { // events were lost: wake everyone to re-read
				w.mu.Lock()
				for _, subs := range w.subs {
					for sub := range subs {
						sub.notify("")
					}
				}
				w.mu.Unlock()
			}
		}
	}
}

// Wait blocks until sub signals, ctx ends, or timeout passes. It reports
// whether a change was signalled.
func (s *Subscription) Wait(ctx context.Context, timeout time.Duration) (bool, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-s.C:
		return true, nil
	case <-t.C:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}
