package hook

import (
	"context"
	"os"
	"strings"
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
	sub, err := hub.Subscribe(targets...)
	if err != nil {
		return Result{}, err
	}
	defer sub.Close()
	parent := os.Getppid()
	for {
		ses, err = h.Store.Session(ses.ID)
		if err != nil || !ses.Live(time.Now()) || os.Getppid() != parent {
			return Result{}, nil // the session or its client is gone
		}
		text, told, err := h.wakeOnce(ctx, ses)
		switch {
		case err != nil:
			return Result{}, err
		case told:
			return Result{Stderr: text + "\n", Exit: 2}, nil
		}
		if _, err := sub.Wait(ctx, lookEvery); err != nil {
			return Result{}, nil
		}
	}
}

// lookEvery bounds a wait between looks without a file change: how soon
// the hook notices that its session or client is gone.
const lookEvery = 2 * time.Second

// wakeOnce tells what waits untold, if anything (told false: nothing).
func (h *Hook) wakeOnce(ctx context.Context, ses fsstore.Session) (string, bool, error) {
	n, err := h.Store.Notices(ctx, h.Config, ses)
	if err != nil {
		return "", false, err
	}
	intr := n.Interrupt
	if intr != nil && intr.ID == ses.Surfaced.StopInterrupt {
		intr = nil
	}
	if intr == nil && n.Empty() {
		return "", false, nil
	}
	text := strings.TrimSpace(untoldText(n))
	if intr != nil {
		text = interruptText(ses, intr) + untoldText(without(n, intr))
	}
	told, err := h.Store.Surface(ctx, ses, n, "hook wake", func(s *fsstore.Surfaced) {
		if intr != nil {
			s.StopInterrupt = intr.ID
		}
	})
	if err != nil || !told {
		return "", false, err
	}
	return fsstore.Clip(text, MaxContext), true, nil
}
