package main

import (
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"aipm/internal/testenv"
)

// TestBenchQuick builds aipm and runs `aipm bench --quick`: every target
// gets a row with a measurement and its floor. It asserts nothing about the
// numbers (machines are shared and noisy), only that each was measured.
func TestBenchQuick(t *testing.T) {
	testenv.SkipIfShort(t, "starts many processes")
	bin := buildAipm(t)
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
		`(?m)^P1i +interrupt p50/p99: written -> receiver's wait returns, \d+ samples +-?[\d.]+ ms / -?[\d.]+ ms +-?[\d.]+ ms / -?[\d.]+ ms +p99 [+-][\d.]+ ms +p99 <= floor \+ 1 ms +(yes|NO) `,
		`(?m)^P2 +send_message throughput, 8 servers, fsync, \d+ sends +\d+ msg/s +\d+ msg/s +\d+% of floor +>= 60% of floor +(yes|NO) +\d+% of a core$`,
		`(?m)^P3 +get_pending_messages p50, 100000 lines vs 100 +[\d.]+ ms +[\d.]+ ms \(100 lines\) +[\d.]+x`,
		`(?m)^P3c +get_pending_messages p50 after compaction, 10000 lines kept of 100000 vs 100 +[\d.]+ ms +[\d.]+ ms \(100 lines\) +[\d.]+x +<= 1.5x \(P3's\) +(yes|NO) `,
		`(?m)^P3s +\.ai-pm/ size, 100000 messages, chat_lines = 10000 \(compaction took [\d.]+m?s\) +[\d.]+ MB +[\d.]+ MB \(not compacted\) +[\d.]+% of it `,
		`(?m)^P4 +aipm serve start -> first authenticate p50 +[\d.]+ ms`,
		`(?m)^P5 +aipm serve resident memory \(peak\), 100000 lines +[\d.]+ MB`,
		`(?m)^P7a +file change -> trigger written p50 \(aipm watch\) +[\d.]+ ms +[\d.]+ ms \(inotify wake\)`,
		`(?m)^P7b +trigger -> agent started -> first tool call p50 +[\d.]+ ms +[\d.]+ ms \(exec aipm version\)`,
		`(?m)^P8a +(aipm-hook|aipm hook) wall time p50/p99: PostToolUse, nothing new, \d+ runs +[\d.]+ ms / [\d.]+ ms +[\d.]+ ms / [\d.]+ ms \((hello-world Go binary|aipm version: [^)]*)\) +p99 [+-][\d.]+ ms, 0 bytes out +p99 <= floor \+ 3 ms, 0 bytes +(yes|NO) `,
		`(?m)^P8b +append -> asyncRewake hook exits p50/p99, \d+ samples +[\d.]+ ms / [\d.]+ ms +[\d.]+ ms / [\d.]+ ms \(inotify wake\) +p99 [+-][\d.]+ ms +p50 <= 50 ms, p99 <= 200 ms +(yes|NO) `,
		`(?m)^P6a +get_next_action over own sent copies p50, 100000 vs 100 .* +[\d.]+x, RSS [\d.]+ MB +<= 1.5x, RSS <= 30 MB +(yes|NO) `,
		`(?m)^P6b +gated call \(get_my_task\) with unread notifications p50, 10000 vs 100 .* +[\d.]+x, RSS [\d.]+ MB +<= 1.5x, RSS <= 30 MB +(yes|NO) `,
		`(?m)^P6c +list_tasks \(default args\) among tasks p50, 1000 vs 100 .* +[\d.]+x, RSS [\d.]+ MB +<= 1.5x, RSS <= 30 MB +(yes|NO) `,
		`(?m)^P6d +get_my_task among tasks p50, 1000 vs 100 .* +[\d.]+x, RSS [\d.]+ MB +<= 1.5x, RSS <= 30 MB +(yes|NO) `,
		`(?m)^P6e +authenticate among tasks p50, 1000 vs 100 .* +[\d.]+x, RSS [\d.]+ MB +<= 1.5x, RSS <= 30 MB +(yes|NO) `,
		`(?m)^P6f +authenticate among other agents' sessions p50, 1000 vs 100 .* +[\d.]+x, RSS [\d.]+ MB +<= 1.5x, RSS <= 30 MB +(yes|NO) `,
		`(?m)^P6g +authenticate over own sent copies p50, 100000 vs 100 .* +[\d.]+x, RSS [\d.]+ MB +<= 1.5x, RSS <= 30 MB +(yes|NO) `,
		`(?m)^P6h +get_next_action over own sent copies, compacted to 10000 p50, 100000 vs 100 .* +[\d.]+x, RSS [\d.]+ MB +<= 1.5x, RSS <= 30 MB +(yes|NO) `,
		`(?m)^P10h1 +P1 over http: send issued -> receiver returns, p50/p99, \d+ samples +[\d.]+ ms / [\d.]+ ms +local [\d.]+ ms / [\d.]+ ms +p99 [+-][\d.]+ ms +p99 <= local \+ 1 ms +(yes|NO) `,
		`(?m)^P10h2 +P2 over http: send_message throughput, 8 servers, fsync, \d+ sends +\d+ msg/s +local \d+ msg/s +\d+% of local +>= 50% of local +(yes|NO) `,
		`(?m)^P10s1 +P1 over ssh: send issued -> receiver returns, p50/p99, \d+ samples +[\d.]+ ms / [\d.]+ ms +local [\d.]+ ms / [\d.]+ ms +p99 [+-][\d.]+ ms +p99 <= local \+ 1 ms +(yes|NO) `,
		`(?m)^P10s2 +P2 over ssh: send_message throughput, 8 servers, fsync, \d+ sends +\d+ msg/s +local \d+ msg/s +\d+% of local +>= 50% of local +(yes|NO) `,
	} {
		if !regexp.MustCompile(row).Match(out) {
			t.Errorf("no row matching %s in:\n%s", row, out)
		}
	}
}

// TestBenchOnly: --only runs the named targets' measurements and no
// others, in either case; an unknown target is a usage mistake (exit 2).
func TestBenchOnly(t *testing.T) {
	testenv.SkipIfShort(t, "starts processes")
	bin := buildAipm(t)
	var stderr strings.Builder
	cmd := exec.Command(bin, "bench", "--quick", "--only", "p4")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("aipm bench --quick --only p4: %v\n%s\n%s", err, out, stderr.String())
	}
	rows := regexp.MustCompile(`(?m)^P\w+ `).FindAllString(string(out), -1)
	if len(rows) != 1 || rows[0] != "P4 " {
		t.Errorf("--only p4 printed rows %q, want only P4:\n%s", rows, out)
	}
	if !regexp.MustCompile(`(?m)^P4 +aipm serve start -> first authenticate p50 +[\d.]+ ms`).Match(out) {
		t.Errorf("no P4 measurement in:\n%s", out)
	}
	if strings.Contains(stderr.String(), "P1:") || !strings.Contains(stderr.String(), "P4:") {
		t.Errorf("--only p4 measured other targets:\n%s", stderr.String())
	}

	// --json: an array of rows, each with its target, met as a boolean and
	// the client's CPU.
	out, err = exec.Command(bin, "bench", "--quick", "--only", "P4", "--json").Output()
	if err != nil {
		t.Fatalf("aipm bench --quick --only P4 --json: %v\n%s", err, out)
	}
	var rowsJSON []map[string]any
	if err := json.Unmarshal(out, &rowsJSON); err != nil || len(rowsJSON) != 1 {
		t.Fatalf("--json printed %d rows (%v):\n%s", len(rowsJSON), err, out)
	}
	r := rowsJSON[0]
	if _, ok := r["met"].(bool); !ok || r["id"] != "P4" || r["target"] != "<= 20 ms" || r["client_cpu"] == nil {
		t.Errorf("--json row: %v", r)
	}

	stderr.Reset()
	cmd = exec.Command(bin, "bench", "--only", "P4,P11")
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("--only P4,P11: err = %v, want exit code 2\n%s", err, out)
	}
	if want := `aipm: --only "P11": no such target; name some of P1 to P10, or a P3, P6, P8, P9 or P10 row (P3c, P3s, P6a to P6h, P8a, P8b, P9a to P9c, P10s1, P10s2, P10h1, P10h2)`; !strings.Contains(stderr.String(), want) {
		t.Errorf("--only P4,P11: stderr %q, want %q", stderr.String(), want)
	}
	if strings.Contains(stderr.String(), "P4:") {
		t.Errorf("--only P4,P11 measured before refusing:\n%s", stderr.String())
	}
}

// buildAipm builds this command into a temporary directory.
func buildAipm(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "aipm")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
