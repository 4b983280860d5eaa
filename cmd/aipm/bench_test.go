package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestBenchQuick builds aipm and runs `aipm bench --quick`: every target
// gets a row with a measurement and its floor. It asserts nothing about the
// numbers (machines are shared and noisy), only that each was measured.
func TestBenchQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("starts many processes")
	}
	bin := filepath.Join(t.TempDir(), "aipm")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var stderr strings.Builder
	cmd := exec.Command(bin, "bench", "--quick")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("aipm bench --quick: %v\n%s\n%s", err, out, stderr.String())
	}
	for _, row := range []string{
		`(?m)^P1 +delivery p50/p99: send issued -> receiver returns, \d+ samples +-?[\d.]+ ms / -?[\d.]+ ms +-?[\d.]+ ms / -?[\d.]+ ms +p99 [+-][\d.]+ ms +p99 <= floor \+ 1 ms +(yes|NO) +\d+% of a core$`,
		`(?m)^P1r +delivery p50/p99: send returns -> receiver returns, \d+ samples +-?[\d.]+ ms / -?[\d.]+ ms`,
		`(?m)^P2 +send_message throughput, 8 servers, fsync, \d+ sends +\d+ msg/s +\d+ msg/s +\d+% of floor +>= 60% of floor +(yes|NO) +\d+% of a core$`,
		`(?m)^P3 +get_pending_messages p50, 100000 lines vs 100 +[\d.]+ ms +[\d.]+ ms \(100 lines\) +[\d.]+x`,
		`(?m)^P4 +aipm serve start -> first authenticate p50 +[\d.]+ ms`,
		`(?m)^P5 +aipm serve resident memory \(peak\), 100000 lines +[\d.]+ MB`,
		`(?m)^P7a +file change -> trigger written p50 \(aipm watch\) +[\d.]+ ms +[\d.]+ ms \(inotify wake\)`,
		`(?m)^P7b +trigger -> agent started -> first tool call p50 +[\d.]+ ms +[\d.]+ ms \(exec aipm version\)`,
		`(?m)^P6a +get_next_action over own sent copies p50, 100000 vs 100 .* +[\d.]+x, RSS [\d.]+ MB +<= 1.5x, RSS <= 30 MB +(yes|NO) `,
		`(?m)^P6b +gated call \(get_my_task\) with unread notifications p50, 10000 vs 100 .* +[\d.]+x, RSS [\d.]+ MB +<= 1.5x, RSS <= 30 MB +(yes|NO) `,
		`(?m)^P6c +list_tasks \(default args\) among tasks p50, 1000 vs 100 .* +[\d.]+x, RSS [\d.]+ MB +<= 1.5x, RSS <= 30 MB +(yes|NO) `,
		`(?m)^P6d +get_my_task among tasks p50, 1000 vs 100 .* +[\d.]+x, RSS [\d.]+ MB +<= 1.5x, RSS <= 30 MB +(yes|NO) `,
		`(?m)^P6e +authenticate among tasks p50, 1000 vs 100 .* +[\d.]+x, RSS [\d.]+ MB +<= 1.5x, RSS <= 30 MB +(yes|NO) `,
		`(?m)^P6f +authenticate among other agents' sessions p50, 1000 vs 100 .* +[\d.]+x, RSS [\d.]+ MB +<= 1.5x, RSS <= 30 MB +(yes|NO) `,
		`(?m)^P6g +authenticate over own sent copies p50, 100000 vs 100 .* +[\d.]+x, RSS [\d.]+ MB +<= 1.5x, RSS <= 30 MB +(yes|NO) `,
	} {
		if !regexp.MustCompile(row).Match(out) {
			t.Errorf("no row matching %s in:\n%s", row, out)
		}
	}
}
