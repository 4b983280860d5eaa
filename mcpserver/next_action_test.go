package mcpserver_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"aipm/fsstore"
	"aipm/internal/fixtures"
)

// An interrupt ends a waiting get_next_action at once, whatever wrote it
// and whatever the session's purpose, and the answer is the interrupt
// (with what that session may do about it), not the wait's answer. Real
// aipm serve processes, the SDK's client, at every protocol revision.
func TestInterruptEndsWait(t *testing.T) {
	sources := []struct {
		name      string
		purpose   string
		watcher   bool // the interrupt is the watcher's (a hand edit)
		interrupt func(t *testing.T, p *project, task fsstore.Task)
	}{
		{"task session, task blocked from the CLI", fsstore.PurposeTask, false, func(t *testing.T, p *project, task fsstore.Task) {
			p.aipm(t, "task", "status", task.ID, "blocked", "--reason", "plans changed", "--as", "lead")
		}},
		{"task session, task file edited by hand", fsstore.PurposeTask, true, func(t *testing.T, p *project, task fsstore.Task) {
			if err := fixtures.Of(p.store).HandEdit(fsstore.Tasks, task.ID, func(f map[string]any) { f["status"] = fsstore.StatusBlocked }); err != nil {
				t.Fatal(err)
			}
		}},
		{"task session, task cancelled by its requester", fsstore.PurposeTask, false, func(t *testing.T, p *project, task fsstore.Task) {
			// only a human or the requester cancels: the requester, here lead, in this process
			if _, err := p.store.UpdateTask(context.Background(), p.cfg, task.ID, task.Requester, fsstore.TaskChange{Status: fsstore.StatusCancelled, Reason: "plans changed"}); err != nil {
				t.Fatal(err)
			}
		}},
		{"chat session, aipm interrupt", fsstore.PurposeChat, false, func(t *testing.T, p *project, _ fsstore.Task) {
			p.aipm(t, "interrupt", "coder", "plans changed", "--as", "lead")
		}},
	}
	for _, rev := range revisions {
		for _, src := range sources {
			t.Run(rev+"/"+src.name, func(t *testing.T) {
				p := newProject(t)
				task := p.taskInProgress("coder", "port the parser")
				if src.watcher {
					p.watch(t)
				}
				waiting := &lineWatch{want: "msg=waiting", seen: make(chan struct{})}
				cs := p.connectWith(rev, []string{"AIPM_LOG=debug"}, waiting)
				token := p.authenticate(cs, "coder", src.purpose)
				if src.purpose == fsstore.PurposeTask {
					// An open delegation: the task session waits for its result.
					if r := call(t, cs, "delegate_to_chat_session", map[string]any{"session_token": token, "target_agent_id": "reviewer", "purpose": "ask about the grammar"}); r.isError {
						t.Fatalf("delegate_to_chat_session: %s", r.text)
					}
				}
				got := make(chan result, 1)
				start := time.Now()
				go func() {
					got <- call(t, cs, "get_next_action", map[string]any{"session_token": token, "wait_seconds": 40})
				}()
				<-waiting.seen
				src.interrupt(t, p, task)
				r := <-got
				t.Logf("the interrupt ended the wait after %v", time.Since(start).Round(time.Millisecond))
				if !r.isError || !strings.HasPrefix(r.text, "INTERRUPT (get_next_action did not run): ") {
					t.Fatalf("the wait answered %s; want the interrupt", r.text)
				}
				wantInstruction(t, r.text, src.purpose)
				notes := call(t, cs, "get_notifications", map[string]any{"session_token": token})
				views, _ := notes.data["notifications"].([]any)
				if len(views) != 1 {
					t.Fatalf("get_notifications: %s", notes.text)
				}
				wantInstruction(t, views[0].(map[string]any)["instruction"].(string), src.purpose)
			})
		}
	}
}

// wantInstruction checks that text tells a session of purpose what to do
// about an interrupt with calls that session may make, and no other.
func wantInstruction(t *testing.T, text, purpose string) {
	t.Helper()
	want, never := `report_completed(result="`, "logout" // blocked or cancelled: TestInterruptKinds
	if purpose == fsstore.PurposeChat {
		want, never = never, want
	}
	if !strings.Contains(text, want) || strings.Contains(text, never) {
		t.Fatalf("a %s session is told %q; want %s and never %s", purpose, text, want, never)
	}
}

// A wait that a notification ends answers with a notification line that
// counts it: the line is computed after the tool ran.
func TestNotificationLineCountsWhatEndedTheWait(t *testing.T) {
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) {
			p := newProject(t)
			waiting := &lineWatch{want: "msg=waiting", seen: make(chan struct{})}
			cs := p.connectWith(rev, []string{"AIPM_LOG=debug"}, waiting)
			token := p.authenticate(cs, "coder", fsstore.PurposeChat)
			got := make(chan result, 1)
			go func() {
				got <- call(t, cs, "get_next_action", map[string]any{"session_token": token, "wait_seconds": 40})
			}()
			<-waiting.seen
			if _, err := p.store.Notify(context.Background(), "coder", fsstore.Notification{Message: "the build is green again"}); err != nil {
				t.Fatal(err)
			}
			r := <-got
			if r.isError || r.str("action") != "get_notifications" {
				t.Fatalf("the wait answered %s; want get_notifications", r.text)
			}
			if line, want := r.str("notification"), "notifications: you have 1 notification: call get_notifications"; line != want {
				t.Fatalf("notification line %q; want %q", line, want)
			}
		})
	}
}

// aipm runs the aipm binary on the project and fails the test if it fails.
func (p *project) aipm(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command(aipmBin, append([]string{"--dir", p.store.ProjectDir()}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("aipm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// watch starts aipm watch on the project until the test ends, and returns
// once it watches.
func (p *project) watch(t *testing.T) {
	t.Helper()
	watching := &lineWatch{want: "msg=watching", seen: make(chan struct{})}
	cmd := exec.Command(aipmBin, "--dir", p.store.ProjectDir(), "watch")
	cmd.Stderr = watching
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	select {
	case <-watching.seen:
	case <-time.After(30 * time.Second):
		t.Fatal("aipm watch did not start")
	}
}
