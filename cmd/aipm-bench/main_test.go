package main

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"aipm/internal/browser"
	"aipm/internal/sshtest"
	"aipm/internal/testenv"
)

// TestBenchQuick builds aipm-bench with aipm and aipm-hook beside it and
// runs `aipm-bench --quick`: every target gets a row with a measurement and
// its floor, each row a subtest. It asserts nothing about the numbers
// (machines are shared and noisy), only that each was measured. A row that
// needs a program this machine lacks (sshd for P10s, Chromium for P9a and
// P9b) must say it was not measured, and its subtest skips naming the
// program.
func TestBenchQuick(t *testing.T) {
	testenv.SkipIfShort(t, "starts many processes")
	dir := build(t, ".", "../aipm", "../aipm-hook")
	var stderr strings.Builder
	cmd := exec.Command(filepath.Join(dir, "aipm-bench"), "--quick")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("aipm-bench --quick: %v\n%s\n%s", err, out, stderr.String())
	}
	if want := "bench: measuring " + filepath.Join(dir, "aipm") + " (beside aipm-bench)\n"; !strings.HasPrefix(stderr.String(), want) {
		t.Errorf("stderr does not start with %q:\n%s", want, stderr.String())
	}
	sshd := func() string { return sshtest.Missing() }
	chromium := func() string {
		if _, err := browser.Find(); err != nil {
			return "chromium (or chromium-browser, google-chrome) on PATH"
		}
		return ""
	}
	for _, row := range []struct {
		id, re string
		needs  func() string // what this machine lacks to measure the row ("" nothing)
		absent string        // the row when it lacks it
	}{
		{id: "P1", re: `(?m)^P1 +delivery p50/p99: send issued -> receiver returns, \d+ samples +-?[\d.]+ ms / -?[\d.]+ ms +-?[\d.]+ ms / -?[\d.]+ ms \(relay floor\) +p50 [+-][\d.]+ ms, p99 [+-][\d.]+ ms +p50 <= floor \+ 0.25 ms, p99 <= floor \+ 1 ms +(yes|NO) +\d+% of a core$`},
		{id: "P1r", re: `(?m)^P1r +delivery p50/p99: send returns -> receiver returns, \d+ samples +-?[\d.]+ ms / -?[\d.]+ ms`},
		{id: "P1i", re: `(?m)^P1i +interrupt p50/p99: written -> receiver's wait returns, \d+ samples +-?[\d.]+ ms / -?[\d.]+ ms +-?[\d.]+ ms / -?[\d.]+ ms \(echo floor\) +p50 [+-][\d.]+ ms, p99 [+-][\d.]+ ms +p50 <= floor \+ 0.25 ms, p99 <= floor \+ 1 ms +(yes|NO) `},
		{id: "P2", re: `(?m)^P2 +send_message throughput, 8 servers, fsync, \d+ sends +\d+ msg/s +\d+ msg/s +\d+% of floor, \d+% of the RPC floor +>= 60% of floor, >= 75% of the RPC floor +(yes|NO) +\d+% of a core$`},
		{id: "P3", re: `(?m)^P3 +get_pending_messages p50, 100000 lines vs 100 +[\d.]+ ms +[\d.]+ ms \(100 lines\) +[\d.]+x`},
		{id: "P3c", re: `(?m)^P3c +get_pending_messages p50 after compaction, 10000 lines kept of 100000 vs 100 +[\d.]+ ms +[\d.]+ ms \(100 lines\) +[\d.]+x +<= 1.5x \(P3's\) +(yes|NO) `},
		{id: "P3s", re: `(?m)^P3s +\.ai-pm/ size, 100000 messages, chat_lines = 10000 \(compaction took [\d.]+m?s\) +[\d.]+ MB +[\d.]+ MB \(not compacted\) +[\d.]+% of it `},
		{id: "P4", re: `(?m)^P4 +aipm serve start -> first authenticate p50 +[\d.]+ ms +[\d.]+ ms \(SDK floor: start -> its tool answered\) +[+-][\d.]+ ms +<= floor \+ 3 ms +(yes|NO) `},
		{id: "P4v", re: `(?m)^P4v +aipm version p50 \(process start\) +[\d.]+ ms +[\d.]+ ms \(SDK floor binary's bare start\) +[+-][\d.]+ ms +<= floor \+ 1 ms +(yes|NO) `},
		{id: "P5", re: `(?m)^P5 +aipm serve resident memory \(peak\), 100000 lines +[\d.]+ MB`},
		{id: "P7a", re: `(?m)^P7a +file change -> trigger written p50 \(aipm watch\) +[\d.]+ ms +[\d.]+ ms \(inotify wake\)`},
		{id: "P7b", re: `(?m)^P7b +trigger -> agent started -> first tool call p50 +[\d.]+ ms +[\d.]+ ms \(two SDK-floor starts\) +[+-][\d.]+ ms +<= floor \+ 5 ms +(yes|NO) `},
		{id: "P8a", re: `(?m)^P8a +aipm-hook wall time p50/p99: PostToolUse, nothing new, \d+ runs +[\d.]+ ms / [\d.]+ ms +[\d.]+ ms / [\d.]+ ms \((hello-world Go binary|aipm version: [^)]*)\) +p99 [+-][\d.]+ ms, 0 bytes out +p99 <= floor \+ 3 ms, 0 bytes +(yes|NO) `},
		{id: "P8a1", re: `(?m)^P8a1 +aipm hook wall time p50/p99: PostToolUse, nothing new, \d+ runs +[\d.]+ ms / [\d.]+ ms +[\d.]+ ms / [\d.]+ ms \((hello-world Go binary|aipm version: [^)]*)\) +p99 [+-][\d.]+ ms, 0 bytes out +p99 <= floor \+ 3 ms, 0 bytes +(yes|NO) `},
		{id: "P8b", re: `(?m)^P8b +append -> asyncRewake hook exits p50/p99, \d+ samples +[\d.]+ ms / [\d.]+ ms +[\d.]+ ms / [\d.]+ ms \(inotify wake\) +p99 [+-][\d.]+ ms +p50 <= 50 ms, p99 <= 200 ms +(yes|NO) `},
		{id: "P6a", re: `(?m)^P6a +get_next_action over own sent copies p50, 100000 vs 100 .* +[\d.]+x, RSS [\d.]+ MB +<= 1.5x, RSS <= 20 MB +(yes|NO) `},
		{id: "P6b", re: `(?m)^P6b +gated call \(get_task\) with unread notifications p50, 10000 vs 100 .* +[\d.]+x, RSS [\d.]+ MB +<= 1.5x, RSS <= 20 MB +(yes|NO) `},
		{id: "P6c", re: `(?m)^P6c +list_tasks \(default args\) among tasks p50, 1000 vs 100 .* +[\d.]+x, RSS [\d.]+ MB +<= 1.5x, RSS <= 20 MB +(yes|NO) `},
		{id: "P6d", re: `(?m)^P6d +get_task among tasks p50, 1000 vs 100 .* +[\d.]+x, RSS [\d.]+ MB +<= 1.5x, RSS <= 20 MB +(yes|NO) `},
		{id: "P6e", re: `(?m)^P6e +authenticate among tasks p50, 1000 vs 100 .* +[\d.]+x, RSS [\d.]+ MB +<= 1.5x, RSS <= 20 MB +(yes|NO) `},
		{id: "P6f", re: `(?m)^P6f +authenticate among other agents' sessions p50, 1000 vs 100 .* +[\d.]+x, RSS [\d.]+ MB +<= 1.5x, RSS <= 20 MB +(yes|NO) `},
		{id: "P6g", re: `(?m)^P6g +authenticate over own sent copies p50, 100000 vs 100 .* +[\d.]+x, RSS [\d.]+ MB +<= 1.5x, RSS <= 20 MB +(yes|NO) `},
		{id: "P6h", re: `(?m)^P6h +get_next_action over own sent copies, compacted to 10000 p50, 100000 vs 100 .* +[\d.]+x, RSS [\d.]+ MB +<= 1.5x, RSS <= 20 MB +(yes|NO) `},
		{id: "P9a", re: `(?m)^P9a +file append -> DOM updated in the browser p50/p99, \d+ samples +[\d.]+ ms / [\d.]+ ms +[\d.]+ ms / [\d.]+ ms \(inotify wake\) +p99 [+-][\d.]+ ms +p99 <= 100 ms, p50 <= 20 ms +(yes|NO) `,
			needs: chromium, absent: `(?m)^P9a +file append -> DOM updated in the browser p50/p99, \d+ samples +not measured: no chromium on PATH .* +NO `},
		{id: "P9b", re: `(?m)^P9b +first render p50 \(navigation -> first data-event-id\), 100000 lines of history vs a new project +[\d.]+ ms +[\d.]+ ms \(new project\) +[\d.]+x +<= 1.5x +(yes|NO) `,
			needs: chromium, absent: `(?m)^P9b +first render p50 \(navigation -> first data-event-id\), 100000 lines of history vs a new project +not measured: no chromium on PATH .* +NO `},
		{id: "P9c", re: `(?m)^P9c +page weight: index\.html \+ app\.js \+ style\.css as served +[\d.]+ KB +- +[\d.]+ \+ [\d.]+ \+ [\d.]+ KB +<= 150 KB +(yes|NO) `},
		{id: "P10h1", re: `(?m)^P10h1 +P1 over http: send issued -> receiver returns, p50/p99, \d+ samples +[\d.]+ ms / [\d.]+ ms +local [\d.]+ ms / [\d.]+ ms +p99 [+-][\d.]+ ms +p99 <= local \+ 1 ms +(yes|NO) `},
		{id: "P10h2", re: `(?m)^P10h2 +P2 over http: send_message throughput, 8 servers, fsync, \d+ sends +\d+ msg/s +local \d+ msg/s +\d+% of local +>= 50% of local +(yes|NO) `},
		{id: "P10s1", re: `(?m)^P10s1 +P1 over ssh: send issued -> receiver returns, p50/p99, \d+ samples +[\d.]+ ms / [\d.]+ ms +local [\d.]+ ms / [\d.]+ ms +p99 [+-][\d.]+ ms +p99 <= local \+ 1 ms +(yes|NO) `,
			needs: sshd, absent: `(?m)^P10s1 +P1 over ssh: \S.* +- +- +- +measured +NO `},
		{id: "P10s2", re: `(?m)^P10s2 +P2 over ssh: send_message throughput, 8 servers, fsync, \d+ sends +\d+ msg/s +local \d+ msg/s +\d+% of local +>= 50% of local +(yes|NO) `,
			needs: sshd, absent: `(?m)^P10s2 +P2 over ssh: \S.* +- +- +- +measured +NO `},
	} {
		t.Run(row.id, func(t *testing.T) {
			if row.needs != nil {
				if why := row.needs(); why != "" {
					if !regexp.MustCompile(row.absent).Match(out) {
						t.Errorf("no row matching %s (not measured, for want of %s) in:\n%s", row.absent, why, out)
					}
					testenv.SkipMissing(t, why)
				}
			}
			if !regexp.MustCompile(row.re).Match(out) {
				t.Errorf("no row matching %s in:\n%s", row.re, out)
			}
		})
	}
}

// TestBenchOnly: --only runs the named targets' measurements and no
// others, in either case, measuring the aipm built from the module when
// none is given and none is beside aipm-bench; --aipm names one; an
// unknown target, or an --aipm that is no aipm, is a usage mistake (exit
// 2) refused before anything is built or measured.
func TestBenchOnly(t *testing.T) {
	testenv.SkipIfShort(t, "starts processes")
	bench := filepath.Join(build(t, "."), "aipm-bench")
	t.Run("only p4 in the module", func(t *testing.T) { checkOnlyInModule(t, bench) })
	aipm := filepath.Join(build(t, "../aipm"), "aipm")
	t.Run("json with aipm", func(t *testing.T) { checkJSONWithAipm(t, bench, aipm) })
	t.Run("row past its deadline", func(t *testing.T) { checkRowTimeout(t, bench, aipm) })
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown target", []string{"--only", "P4,P11"}, `aipm-bench: --only "P11": no such target; name some of P1 to P10 or P12, or a P3, P6, P8, P9, P10 or P12 row (P3c, P3s, P6a to P6h, P8a, P8b, P9a to P9c, P10s1, P10s2, P10h1, P10h2, P12a, P12r, P12w)` + "\n"},
		{"no such aipm", []string{"--only", "P4", "--aipm", "no/such/aipm"}, `aipm-bench: --aipm "no/such/aipm": no such file: give the path of an aipm binary (go build -o aipm ./cmd/aipm)` + "\n"},
		{"not aipm", []string{"--only", "P4", "--aipm", bench}, `aipm-bench: --aipm "` + bench + `": ` + bench + ` version: exit status 2: give the path of an aipm binary (go build -o aipm ./cmd/aipm)` + "\n"},
		{"an argument", []string{"P4"}, `aipm-bench: aipm-bench takes no arguments, not "P4": see aipm-bench --help` + "\n"},
		{"a bad flag", []string{"--quik"}, `aipm-bench: unknown flag: --quik: see aipm-bench --help` + "\n"},
		{"a negative deadline", []string{"--row-timeout", "-1s"}, `aipm-bench: --row-timeout -1s: give a positive duration, e.g. 90s or 5m` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) { checkUsageMistake(t, bench, tc.args, tc.want) })
	}
	t.Run("outside the module", func(t *testing.T) { checkNothingToMeasure(t, bench) })
}

// runBench runs aipm-bench with args and returns its stdout, its stderr
// and how it ended.
func runBench(bench string, args ...string) ([]byte, string, error) {
	var stderr strings.Builder
	cmd := exec.Command(bench, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	return out, stderr.String(), err
}

// checkOnlyInModule: --only p4, run in the module with no --aipm, says it
// measures the aipm it built and prints and measures P4's rows only.
func checkOnlyInModule(t *testing.T, bench string) {
	out, stderr, err := runBench(bench, "--quick", "--only", "p4")
	if err != nil {
		t.Fatalf("aipm-bench --quick --only p4: %v\n%s\n%s", err, out, stderr)
	}
	if !regexp.MustCompile(`(?m)^bench: measuring \S+/aipm \(built from \./cmd/aipm\)$`).MatchString(stderr) {
		t.Errorf("run in the module, aipm-bench did not say it measures the aipm it built:\n%s", stderr)
	}
	rows := regexp.MustCompile(`(?m)^P\w+ `).FindAllString(string(out), -1)
	if !slices.Equal(rows, []string{"P4 ", "P4v "}) {
		t.Errorf("--only p4 printed rows %q, want only P4's, P4 and P4v:\n%s", rows, out)
	}
	if !regexp.MustCompile(`(?m)^P4 +aipm serve start -> first authenticate p50 +[\d.]+ ms`).Match(out) {
		t.Errorf("no P4 measurement in:\n%s", out)
	}
	if strings.Contains(stderr, "P1:") || !strings.Contains(stderr, "P4:") {
		t.Errorf("--only p4 measured other targets:\n%s", stderr)
	}
}

// checkJSONWithAipm: --json prints an array of rows, each with its
// target, met as a boolean and the client's CPU; --aipm names the aipm
// measured.
func checkJSONWithAipm(t *testing.T, bench, aipm string) {
	out, stderr, err := runBench(bench, "--quick", "--only", "P4", "--json", "--aipm", aipm)
	if err != nil {
		t.Fatalf("aipm-bench --quick --only P4 --json --aipm %s: %v\n%s\n%s", aipm, err, out, stderr)
	}
	if want := "bench: measuring " + aipm + " (--aipm)\n"; !strings.HasPrefix(stderr, want) {
		t.Errorf("stderr does not start with %q:\n%s", want, stderr)
	}
	var rowsJSON []map[string]any
	if err := json.Unmarshal(out, &rowsJSON); err != nil || len(rowsJSON) != 2 {
		t.Fatalf("--json printed %d rows (%v):\n%s", len(rowsJSON), err, out)
	}
	r := rowsJSON[0]
	if _, ok := r["met"].(bool); !ok || r["id"] != "P4" || r["target"] != "<= floor + 3 ms" || r["client_cpu"] == nil {
		t.Errorf("--json row: %v", r)
	}
	checkJSONRowNumbers(t, r)
}

// checkJSONRowNumbers: a P4 row's numbers in --json are aipm's and the
// floor's p50, and the target as a check of aipm's p50 above the floor's
// against 3 ms, met as the row is.
func checkJSONRowNumbers(t *testing.T, r map[string]any) {
	aipmP50, _ := r["aipm_values"].(map[string]any)["p50_ms"].(float64)
	floorP50, _ := r["floor_values"].(map[string]any)["p50_ms"].(float64)
	checks, _ := r["checks"].([]any)
	if aipmP50 <= 0 || floorP50 <= 0 || len(checks) != 1 || r["error"] != "" {
		t.Fatalf("--json row's numbers: %v", r)
	}
	c := checks[0].(map[string]any)
	over, _ := c["value"].(float64)
	if c["of"] != "p50 - floor p50" || math.Abs(over-(aipmP50-floorP50)) > 1e-6 || c["op"] != "<=" || c["limit"] != 3.0 || c["unit"] != "ms" || c["met"] != r["met"] || r["met"] != (over <= 3) {
		t.Errorf("--json row's check: %v, in %v", c, r)
	}
}

// checkRowTimeout: a target that passes its deadline has its row printed
// not met with why, and aipm-bench exits 1 naming it.
func checkRowTimeout(t *testing.T, bench, aipm string) {
	out, stderr, err := runBench(bench, "--quick", "--only", "P4", "--aipm", aipm, "--row-timeout", "1ms")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.HasSuffix(stderr, "aipm-bench: not measured: P4, P4v (their rows say why)\n") {
		t.Errorf("--row-timeout 1ms: err = %v, want exit code 1 naming P4\n%s", err, stderr)
	}
	if !regexp.MustCompile(`(?m)^P4 +aipm serve start -> first authenticate; aipm version +not measured: did not finish in 1ms: .* +- +- +- +NO +-$`).Match(out) {
		t.Errorf("--row-timeout 1ms: no row of P4 not measured in:\n%s", out)
	}
}

// checkUsageMistake: aipm-bench with args exits 2, prints nothing, and
// says want on stderr.
func checkUsageMistake(t *testing.T, bench string, args []string, want string) {
	out, stderr, err := runBench(bench, args...)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("aipm-bench %s: err = %v, want exit code 2\n%s\n%s", strings.Join(args, " "), err, out, stderr)
	}
	if stderr != want || len(out) != 0 {
		t.Errorf("aipm-bench %s: stdout %q, stderr %q, want nothing and %q", strings.Join(args, " "), out, stderr, want)
	}
}

// checkNothingToMeasure: outside the module, with no aipm beside
// aipm-bench nor on PATH (only go's directory), there is nothing to
// measure.
func checkNothingToMeasure(t *testing.T, bench string) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err) // build found it
	}
	var stderr strings.Builder
	cmd := exec.Command(bench, "--only", "P4")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(goBin))
	cmd.Stderr = &stderr
	_, err = cmd.Output()
	want := "aipm-bench: no aipm to measure: none beside aipm-bench, not run inside aipm's module (to build ./cmd/aipm), none on PATH; give one with --aipm PATH\n"
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || stderr.String() != want {
		t.Errorf("outside the module: err = %v, stderr %q, want exit code 2 and %q", err, stderr.String(), want)
	}
}

// build builds the packages (directories relative to this one) into a
// temporary directory and returns it.
func build(t *testing.T, pkgs ...string) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		testenv.SkipMissing(t, "go on PATH (to build aipm-bench and the aipm it measures)")
	}
	dir := t.TempDir()
	args := append(append(append([]string{"build"}, testenv.GoBuildFlags()...), "-o", dir+string(filepath.Separator)), pkgs...)
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", strings.Join(pkgs, " "), err, out)
	}
	return dir
}
