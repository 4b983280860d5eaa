package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"aipm/fsstore"
	"aipm/internal/fixtures"
	"aipm/internal/lockedfile"
	"aipm/wake"
	"aipm/watcher"
)

// watchBench measures P7 with a real watcher (in this process) on a
// throw-away project: a file change -> its trigger written, beside an
// inotify wake of an fsync'd append; and a trigger -> the started agent's
// first tool call (its authenticate, seen as its session document), beside
// the SDK floor's bare start plus its start to its tool's answer.
func (b *bench) watchBench() ([]Row, error) {
	samples := b.starts
	b.progress("P7: %d trigger writes and %d agent starts by aipm watch", samples*3, samples)
	store, keys, err := b.project("p7", "coder", "reader")
	if err != nil {
		return nil, err
	}
	if err := b.setAgentCommand(store, "coder", []string{b.aipm, "sim"}); err != nil {
		return nil, err
	}
	if _, err := store.SaveCredential("coder", keys["coder"]); err != nil {
		return nil, err
	}
	cfg, err := store.LoadConfig()
	if err != nil {
		return nil, err
	}
	if err := fixtures.Of(store).Collections(fsstore.Pending, fsstore.Sessions, fsstore.Runs); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(b.ctx)
	defer cancel()
	d := watcher.New(store, slog.New(slog.NewTextHandler(io.Discard, nil)))
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() { cancel(); <-done }()
	hub := wake.New()

	// A change -> its trigger. The agent "reader" has no command: only the
	// trigger is measured; reading the message and removing the trigger
	// prepare the next sample.
	trigger, _ := store.TriggerPath(fsstore.Pending, "reader", fsstore.PurposeChat)
	probe := newFloorLog(filepath.Join(b.root, "p7-floor.jsonl"))
	defer probe.Close()
	var toTrigger, floor []time.Duration
	for i := 0; i < samples*3; i++ {
		lat, err := waitFor(ctx, hub, trigger, func() error {
			_, err := store.Send(ctx, cfg, fsstore.OutgoingMessage{From: fsstore.SystemSender, To: "reader", Content: "bench"})
			return err
		}, func() bool { return fileExists(trigger) })
		if err != nil {
			return nil, err
		}
		toTrigger = append(toTrigger, lat)
		if err := settle(ctx, store); err != nil {
			return nil, err
		}
		lat, err = waitFor(ctx, hub, probe.path, func() error {
			return probe.append(ctx, i)
		}, func() bool { return true })
		if err != nil {
			return nil, err
		}
		floor = append(floor, lat)
	}

	// A trigger -> the agent process started -> its first tool call.
	// Its floor is two SDK-floor starts, one for each program that starts:
	// the agent (an MCP client: the binary's bare start) and the aipm serve
	// it starts (to its tool's answer, as P4's floor).
	sdk, err := b.sdkFloor()
	if err != nil {
		return nil, err
	}
	sessions := store.CollectionDir(fsstore.Sessions)
	var toCall, startFloor []time.Duration
	for i := 0; i < samples; i++ {
		start := time.Now()
		if err := b.command(sdk.bin, "version").Run(); err != nil {
			return nil, err
		}
		bare := time.Since(start)
		served, err := sdk.start(b)
		if err != nil {
			return nil, err
		}
		startFloor = append(startFloor, bare+served)
		var ses fsstore.Session
		lat, err := waitFor(ctx, hub, sessions, func() error {
			return store.Triggers().Write(ctx, fsstore.Trigger{Agent: "coder", Purpose: fsstore.PurposeChat, Reason: "bench"})
		}, func() bool {
			live, _ := store.LiveSessions(time.Now())
			if len(live) > 0 {
				ses = live[0]
			}
			return len(live) > 0
		})
		if err != nil {
			return nil, err
		}
		toCall = append(toCall, lat)
		if _, err := store.EndSession(ctx, ses.ID, fsstore.EndLogout); err != nil {
			return nil, err
		}
		runs := store.CollectionDir(fsstore.Runs)
		if _, err := waitFor(ctx, hub, runs, func() error { return nil }, func() bool {
			r, _ := store.Runs().List()
			return len(r) == 0
		}); err != nil {
			return nil, err
		}
	}
	for _, s := range [][]time.Duration{toTrigger, floor, toCall, startFloor} {
		slices.Sort(s)
	}
	trig, fl := percentile(toTrigger, 50), percentile(floor, 50)
	call, ex := percentile(toCall, 50), percentile(startFloor, 50)
	return []Row{
		Row{id: "P7a", what: "file change -> trigger written p50 (aipm watch)", aipm: ms(trig), floor: ms(fl) + " (inotify wake)",
			compared: signedMs(trig - fl), target: "<= floor + 2 ms", aipmValues: median(toTrigger), floorValues: median(floor),
		}.judged(atMost("p50 - floor p50", msOf(trig-fl), 2, "ms")),
		Row{id: "P7b", what: "trigger -> agent started -> first tool call p50", aipm: ms(call), floor: ms(ex) + " (two SDK-floor starts)",
			compared: signedMs(call - ex), target: fmt.Sprintf("<= floor + %d ms", agentStartOver), aipmValues: median(toCall), floorValues: median(startFloor),
		}.judged(atMost("p50 - floor p50", msOf(call-ex), agentStartOver, "ms")),
	}, nil
}

// settle reads reader's messages and removes its trigger, until the
// watcher leaves it removed: the next sample starts from nothing pending.
func settle(ctx context.Context, store *fsstore.Store) error {
	if _, _, err := store.Unread(ctx, "reader", 1000, false); err != nil {
		return err
	}
	for i := 0; ; i++ {
		_, removed, err := store.Triggers().Expire(ctx, "reader", fsstore.PurposeChat, 0, time.Now())
		if err != nil {
			return err
		}
		if !removed {
			return nil
		}
		if i > 5000 {
			return errors.New("bench: the watcher did not settle")
		}
		time.Sleep(2 * time.Millisecond) // a pass that read the message before it was read may rewrite it
	}
}

// waitFor subscribes to target, runs act, and returns how long until done
// holds (checked at each wake).
func waitFor(ctx context.Context, hub *wake.Hub, target string, act func() error, done func() bool) (time.Duration, error) {
	sub, err := hub.Subscribe(target)
	if err != nil {
		return 0, err
	}
	defer sub.Close()
	start := time.Now()
	if err := act(); err != nil {
		return 0, err
	}
	deadline := start.Add(30 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("bench: gave up waiting on %s", target)
		}
		if _, err := sub.Wait(ctx, 100*time.Millisecond); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

// floorLog is the inotify floor's file: a locked, fsync'd append of one
// line, as every append of aipm's is (lockedfile), with no rule behind it.
type floorLog struct {
	*lockedfile.Appender
	path string
}

func newFloorLog(path string) floorLog {
	return floorLog{lockedfile.NewAppender(path, fsstore.ModeFile), path}
}

// append writes the line {"n":n} and waits for the disk.
func (l floorLog) append(ctx context.Context, n int) error {
	flush, err := l.Write(ctx, fmt.Appendf(nil, `{"n":%d}`, n), lockedfile.AppendOptions{Durable: true})
	if err != nil {
		return fmt.Errorf("bench: append %s: %w", l.path, err)
	}
	return flush()
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// setAgentCommand gives agent a command in the bench project's config.
func (b *bench) setAgentCommand(store *fsstore.Store, agent string, command []string) error {
	q := ""
	for i, c := range command {
		if i > 0 {
			q += ", "
		}
		q += fmt.Sprintf("%q", c)
	}
	return store.EditConfig(b.ctx, func(data []byte, _ *fsstore.Config) ([]byte, error) {
		text := string(data)
		marker := fmt.Sprintf("id = %q\n", agent)
		i := strings.Index(text, marker)
		if i < 0 {
			return nil, fmt.Errorf("bench: agent %s not in config", agent)
		}
		i += len(marker)
		return []byte(text[:i] + "command = [" + q + "]\n" + text[i:]), nil
	})
}
