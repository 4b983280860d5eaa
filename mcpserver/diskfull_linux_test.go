package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// A full disk, played by a file size limit on the aipm serve process
// (RLIMIT_FSIZE; Go programs ignore SIGXFSZ, so writes fail with EFBIG):
// read-only tools keep working although the session's sliding expiry
// cannot be saved, writes fail with disk_full and leave no fragment, and
// service resumes when space returns.
func TestDiskFull(t *testing.T) {
	p := newProject(t)
	task := p.taskInProgress("coder", "disk full")
	cmd := exec.Command(aipmBin, "--dir", p.store.ProjectDir(), "serve")
	cmd.Stderr = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "disk-full", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	token := p.authenticate(cs, "coder", "task")
	chat := p.authenticate(cs, "reviewer", "chat")
	if r := call(t, cs, "send_message", map[string]any{"session_token": chat, "target_agent_id": "coder", "content": "before"}); r.isError {
		t.Fatal(r.text)
	}
	for _, tok := range []string{token, chat} {
		backdate(t, p, tok, 2*time.Minute) // the next call slides the expiry: a write
	}

	fileSizeLimit(t, cmd.Process.Pid, 1)
	before := p.tree()
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"get_task", map[string]any{"session_token": token, "task_id": task.ID}},
		{"list_tasks", map[string]any{"session_token": token}},
		{"get_task", map[string]any{"session_token": token}},
		{"help", map[string]any{"session_token": chat}},
	} {
		if r := call(t, cs, c.tool, c.args); r.isError {
			t.Errorf("%s on a full disk: %s", c.tool, r.text)
		}
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"send_message", map[string]any{"session_token": chat, "target_agent_id": "coder", "content": "lost?"}},
		{"update_task_status", map[string]any{"session_token": token, "status": "blocked", "reason": "disk"}},
	} {
		r := call(t, cs, c.tool, c.args)
		if r.code() != "disk_full" || !strings.Contains(r.text, "nothing was written") {
			t.Errorf("%s on a full disk: %s", c.tool, r.text)
		}
	}
	if p.tree() != before {
		t.Error("calls on a full disk changed .ai-pm")
	}

	fileSizeLimit(t, cmd.Process.Pid, ^uint64(0)) // as high as allowed
	if r := call(t, cs, "send_message", map[string]any{"session_token": chat, "target_agent_id": "coder", "content": "after"}); r.isError {
		t.Errorf("send_message after space returned: %s", r.text)
	}
	if r := call(t, cs, "get_task", map[string]any{"session_token": token, "task_id": task.ID}); r.isError {
		t.Errorf("get_task after space returned: %s", r.text)
	}
}

// fileSizeLimit sets the soft RLIMIT_FSIZE of process pid (prlimit(2)).
func fileSizeLimit(t *testing.T, pid int, limit uint64) {
	t.Helper()
	var old syscall.Rlimit
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_FSIZE, 0, uintptr(unsafe.Pointer(&old)), 0, 0); e != 0 {
		t.Fatalf("prlimit: %v", e)
	}
	lim := syscall.Rlimit{Cur: min(limit, old.Max), Max: old.Max}
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_FSIZE, uintptr(unsafe.Pointer(&lim)), 0, 0, 0); e != 0 {
		t.Fatalf("prlimit: %v", e)
	}
}

// backdate moves a session's last call into the past, within its idle
// timeout, as if the agent had paused.
func backdate(t *testing.T, p *project, token string, d time.Duration) {
	t.Helper()
	id, _, _ := strings.Cut(token, ".")
	path, _ := p.store.DocPath(fsstore.Sessions, id)
	var ses fsstore.Session
	if err := readDoc(path, &ses); err != nil {
		t.Fatal(err)
	}
	ses.LastSeenAt = ses.LastSeenAt.Add(-d)
	data, _ := json.Marshal(ses)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
