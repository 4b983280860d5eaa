package watcher

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"aipm/fsstore"
	"aipm/internal/failpoint"
)

// helperRoles are the helper roles defined beside the tests that use them.
var helperRoles = map[string]func() error{}

func init() { helperRoles["idler"] = helperIdler }

// helperIdler is an agent slow to authenticate: it prints its pid (to its
// run log) and waits, for a minute at most.
func helperIdler() error {
	fmt.Println("pid", os.Getpid())
	time.Sleep(time.Minute)
	return nil
}

// startedPIDs reads the pids the idlers printed in agent's run logs.
func (p *project) startedPIDs(agent string) []int {
	logs, _ := filepath.Glob(p.path("logs/" + agent + "/*.log"))
	var pids []int
	for _, l := range logs {
		data, _ := os.ReadFile(l)
		if s, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "pid "); ok {
			if pid, err := strconv.Atoi(s); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// A watcher killed between starting an agent's process and recording its
// pid leaves that process running; the next watcher sees it (by the run's
// lock, which the process inherited) and starts no second one (issue 21,
// item 14).
func TestKilledWatcherBeforePID(t *testing.T) {
	p := newProject(t, "", map[string]string{"coder": "idler"})
	t.Cleanup(func() {
		for _, pid := range p.startedPIDs("coder") {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	p.send("lead", "coder", "hello")
	first := exec.Command(os.Args[0], "-test.run=^$", "helper:watch")
	first.Env = append(os.Environ(), fsstore.EnvProjectDir+"="+p.store.ProjectDir(), failpoint.Env+"=after-start")
	first.Stderr = p.log
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	if err := first.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the first watcher did not die at its failpoint: %v", err)
	}
	eventually(t, "the first idler printed its pid", func() bool { return len(p.startedPIDs("coder")) == 1 })
	_, passes := p.run()
	<-passes
	alive := 0
	for _, pid := range p.startedPIDs("coder") {
		if syscall.Kill(pid, 0) == nil {
			alive++
		}
	}
	if logs, _ := filepath.Glob(p.path("logs/coder/*.log")); len(logs) != 1 || alive != 1 {
		t.Fatalf("coder was started %d times, %d processes live; want once, one:\n%s", len(logs), alive, p.log)
	}
}
