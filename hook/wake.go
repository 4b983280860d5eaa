package hook

import (
	"context"
	"os"
	"time"

	"aipm/fsstore"
	"aipm/wake"
)

// Wake is the idle wake (Claude Code's asyncRewake Stop hook): it waits,
// woken by fsnotify on the files that concern the session, until
// something the model was not told of arrives, then tells it on stderr
// with exit code 2, which wakes the idle session. One waits per session
// (a lock): a second exits at once. It exits 0 on its own when the
// session ends or the client that started it is gone.
func (h *Hook) Wake(ctx context.Context, hub *wake.Hub) (Result, error) {
	ses, ok, err := h.Session(time.Now())
	if err != nil || !ok {
		return Result{}, err
	}
	lock, ok, err := h.Store.TryWakeLock(ses)
	if err != nil || !ok {
		return Result{}, err
	}
	defer lock.Close()
	targets, err := h.Store.WakeTargets(ses)
	if err != nil {
		return Result{}, err
	}
	w := &watch{hub: hub, targets: targets}
	defer w.close()
	parent := os.Getppid()
	for {
		if err := w.subscribe(); err != nil {
			return Result{}, err
		}
		ses, err = h.Store.Session(ses.ID)
		if err != nil || !ses.Alive(time.Now()) || os.Getppid() != parent {
			return Result{}, nil // the session, its aipm serve or its client is gone
		}
		text, told, err := h.wakeOnce(ctx, ses, w)
		switch {
		case err != nil:
			return Result{}, err
		case told:
			return Result{Stderr: text + "\n", Exit: 2}, nil
		}
		if w.sub != nil {
			if _, err := w.sub.Wait(ctx, lookEvery); err != nil {
				return Result{}, nil
			}
		}
	}
}

// watch is the wake hook's fsnotify subscription, closed (with its hub)
// as soon as there is something to tell: the process exits right after,
// and the kernel's teardown of the watches then overlaps the write that
// records what it told instead of delaying the exit. If another process
// told it first, the hook subscribes again before it looks again.
type watch struct {
	hub     *wake.Hub
	targets []string
	sub     *wake.Subscription
	closing chan struct{}
}

func (w *watch) subscribe() error {
	if w.sub != nil {
		return nil
	}
	if w.closing != nil {
		<-w.closing
		w.hub, w.closing = wake.New(), nil
	}
	sub, err := w.hub.Subscribe(w.targets...)
	if err != nil {
		return err
	}
	w.sub = sub
	return nil
}

// release starts closing the subscription and its hub in the background.
func (w *watch) release() {
	if w.sub == nil {
		return
	}
	w.sub.Close()
	w.sub, w.closing = nil, make(chan struct{})
	go func(hub *wake.Hub, done chan struct{}) {
		hub.Close()
		close(done)
	}(w.hub, w.closing)
}

// close waits for a release to finish (or releases now).
func (w *watch) close() {
	w.release()
	if w.closing != nil {
		<-w.closing
	}
}

// lookEvery bounds a wait between looks without a file change: how soon
// the hook notices that its session or client is gone.
const lookEvery = 2 * time.Second

// wakeOnce tells what waits untold, if anything (told false: nothing, or
// another process told it first), releasing w's watches first when there
// is something.
func (h *Hook) wakeOnce(ctx context.Context, ses fsstore.Session, w *watch) (string, bool, error) {
	reason, told, err := h.tellTurnEnd(ctx, ses, "wake", func(*fsstore.Surfaced) { w.release() })
	if err != nil || !told {
		return "", false, err
	}
	return fsstore.Clip(reason, MaxContext), true, nil
}
