package fsstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"aipm/fsstore/internal/storage"
	"aipm/internal/testenv"
)

// resolveLinks follows every link of a path as a write through it would,
// real links under a temporary directory: to a directory, to a file, in a
// chain, relative with a ".." read from the link's resolved directory, a
// dangling link (to where the write creates the file, in a directory that
// does not exist too), a loop (stopped), and what does not exist kept as
// written.
func TestResolveLinks(t *testing.T) {
	root := resolveLinks(t.TempDir())
	at := func(rel string) string { return filepath.Join(root, filepath.FromSlash(rel)) }
	for _, d := range []string{"src/deep/er", "other"} {
		if err := os.MkdirAll(at(d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(at("src/a.go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"dir":          "src",
		"file":         "src/a.go",
		"chain":        "file",
		"deep":         "src/deep/er",
		"up":           "deep/../x", // deep's .. is src/deep, not the project
		"dangling":     "src/new.go",
		"dangling-dir": "missing/new.go",
		"abs":          at("other"),
		"loop-a":       "loop-b",
		"loop-b":       "loop-a",
	} {
		if err := os.Symlink(filepath.FromSlash(target), at(link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ path, want string }{
		{"src/a.go", "src/a.go"},
		{"dir/a.go", "src/a.go"},
		{"dir/new.go", "src/new.go"},
		{"file", "src/a.go"},
		{"chain", "src/a.go"},
		{"up", "src/deep/x"},
		{"deep/../y", "src/deep/y"},
		{"dangling", "src/new.go"},
		{"dangling-dir", "missing/new.go"},
		{"abs/x", "other/x"},
		{"nothing/../dir/a.go", "dir/a.go"}, // after a missing name, as written
		{"loop-a", "loop-a"},
	} {
		if got := resolveLinks(root + string(filepath.Separator) + filepath.FromSlash(tc.path)); got != at(tc.want) && !(tc.path == "loop-a" && (got == at("loop-b") || got == at("loop-a"))) {
			t.Errorf("resolveLinks(%s) = %s, want %s", tc.path, got, at(tc.want))
		}
	}
}

// The comparison rule with the file system's probe forced either way, so
// that it is proven on any machine: NFC always (an NFD spelling is the
// same name), case folded only where the file system is case-insensitive,
// simple folding (the Kelvin sign is k, ß stays ß), globs untouched.
func TestLeaseKeyFold(t *testing.T) {
	for _, tc := range []struct {
		a, b       string
		same, fold bool
	}{
		{"docs/caf\u00e9.md", "docs/cafe\u0301.md", true, false},
		{"docs/caf\u00e9.md", "docs/cafe\u0301.md", true, true},
		{"SRC/Main.go", "src/main.go", false, false},
		{"SRC/Main.go", "src/main.go", true, true},
		{"CAF\u0045\u0301/x", "caf\u00e9/x", true, true},
		{"\u212a.go", "k.go", true, true},
		{"stra\u00dfe", "strasse", false, true},
		{"src/*.GO", "src/*.go", true, true},
	} {
		if same := leaseKey(tc.a, tc.fold) == leaseKey(tc.b, tc.fold); same != tc.same {
			t.Errorf("fold %v: %q and %q the same: %v, want %v", tc.fold, tc.a, tc.b, same, tc.same)
		}
	}
}

// forceFold makes s compare names as a case-insensitive file system does
// (fold) or not, whatever its probe would find.
func forceFold(s *Store, fold bool) {
	s.leaseFS().fold = fold
}

// With the probe's answer forced: on a case-insensitive file system,
// another case of a leased path is the leased file for a write check, a
// take and a release; on a case-sensitive one it is another file.
func TestLeaseCaseRule(t *testing.T) {
	for _, fold := range []bool{false, true} {
		s, cfg := leadAndCoder(t)
		forceFold(s, fold)
		checkCaseRule(t, s, cfg, fold)
	}
}

// checkCaseRule is TestLeaseCaseRule's story for one answer of the probe.
func checkCaseRule(t *testing.T, s *Store, cfg *storage.Config, fold bool) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.TakeLease(ctx, cfg, LeaseRequest{Holder: "lead", Paths: []string{"src/main.go", "lib/*.go"}}); err != nil {
		t.Fatal(err)
	}
	blocked, err := s.LeaseCheck("coder", []string{"SRC/Main.go", "LIB/x.GO", filepath.Join(s.ProjectDir(), "Src", "MAIN.go")})
	if err != nil || len(blocked) != map[bool]int{false: 0, true: 3}[fold] {
		t.Errorf("fold %v: LeaseCheck of other cases = %v, %v", fold, blocked, err)
	}
	_, err = s.TakeLease(ctx, cfg, LeaseRequest{Holder: "coder", Paths: []string{"SRC"}})
	if conflict := errors.Is(err, ErrLeaseConflict); conflict != fold {
		t.Errorf("fold %v: coder's take of SRC: %v", fold, err)
	}
	ended, err := s.ReleaseLeases(ctx, "lead", []string{"SRC/MAIN.GO"})
	if released := err == nil && len(ended) == 1; released != fold {
		t.Errorf("fold %v: lead's release of SRC/MAIN.GO: %v, %v", fold, ended, err)
	}
}

// The probe itself: a case-sensitive directory is told from a
// case-insensitive one, also when it holds a separate .AI-PM beside
// .ai-pm; a real case-insensitive directory (CaseInsensitiveDir) folds.
func TestCaseInsensitiveProbe(t *testing.T) {
	s := newTestStore(t)
	if caseInsensitive(s.Root()) {
		t.Error("a case-sensitive project probed case-insensitive")
	}
	if err := os.Mkdir(filepath.Join(s.ProjectDir(), ".AI-PM"), 0o755); err != nil {
		t.Fatal(err)
	}
	if caseInsensitive(s.Root()) {
		t.Error("a case-sensitive project holding .AI-PM too probed case-insensitive")
	}
	dir := testenv.CaseInsensitiveDir(t)
	if err := os.Mkdir(filepath.Join(dir, ".ai-pm"), 0o755); err != nil {
		t.Fatal(err)
	}
	if !caseInsensitive(filepath.Join(dir, ".ai-pm")) {
		t.Error("a case-insensitive directory probed case-sensitive")
	}
}

// On a real case-insensitive file system: a write, a take and a release
// in another case of a leased path are the leased file's, and the probe
// finds it so by itself.
func TestLeaseCaseInsensitiveFS(t *testing.T) {
	dir := testenv.CaseInsensitiveDir(t)
	pretendFilesystem(t, "local") // FUSE's exFAT, which aipm refuses as possibly remote
	s, err := Init(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []NewAgent{{ID: "lead", Type: storage.AgentHuman}, {ID: "coder", Type: storage.AgentAI}} {
		if _, err := s.AddAgent(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := s.files.LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "src", "main.go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if !s.leaseFS().fold {
		t.Fatal("the probe found a case-insensitive file system case-sensitive")
	}
	checkCaseRule(t, s, cfg, true)
}

// A hard link of a leased file is the leased file, wherever it is (in the
// project or out of it): a literal lease is one stat away; one under a
// leased directory is found while the search bound lasts, and not past it.
func TestLeaseHardLinks(t *testing.T) {
	s, cfg := leadAndCoder(t)
	ctx := context.Background()
	at := func(rel string) string { return filepath.Join(s.ProjectDir(), filepath.FromSlash(rel)) }
	if err := os.MkdirAll(at("src/deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"src/a.go", "src/deep/b.go", "free.go"} {
		if err := os.WriteFile(at(f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	outside := filepath.Join(t.TempDir(), "a.go")
	for link, target := range map[string]string{at("a-link.go"): at("src/a.go"), outside: at("src/a.go"), at("b-link.go"): at("src/deep/b.go"), at("free-link.go"): at("free.go")} {
		if err := os.Link(target, link); err != nil {
			testenv.SkipMissing(t, "hard links in a temporary directory ("+err.Error()+")")
		}
	}
	if _, err := s.TakeLease(ctx, cfg, LeaseRequest{Holder: "lead", Paths: []string{"src/a.go"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TakeLease(ctx, cfg, LeaseRequest{Holder: "lead", Paths: []string{"src/deep"}}); err != nil {
		t.Fatal(err)
	}
	blocked, err := s.LeaseCheck("coder", []string{"a-link.go", outside, "b-link.go", "free-link.go"})
	if err != nil || len(blocked) != 3 || blocked[0].Against != "src/a.go" || blocked[1].Path != outside || blocked[2].Against != "src/deep" {
		t.Errorf("LeaseCheck of hard links = %v, %v; want a-link.go and %s as src/a.go, b-link.go as src/deep", blocked, err, outside)
	}
	leases, err := s.Leases()
	if err != nil {
		t.Fatal(err)
	}
	for bound, want := range map[int]bool{0: false, 4: false, 5: true} { // src, a.go; src, deep, b.go
		budget := bound
		if got := s.linkedLease(leases, "coder", s.leaseFile("b-link.go"), &budget) != nil; got != want {
			t.Errorf("with a bound of %d entries, found %v, want %v", bound, got, want)
		}
	}
}

// What a take stores for a pattern named through links: its literal
// prefix resolved (a ".." from the link's target, not cleaned away), the
// glob segments as written; refused, with one sentence and nothing taken,
// when it leads outside the project, to the project itself or into .ai-pm.
func TestLeasePatternsResolve(t *testing.T) {
	s, cfg := leadAndCoder(t)
	at := func(rel string) string { return filepath.Join(s.ProjectDir(), filepath.FromSlash(rel)) }
	if err := os.MkdirAll(at("src/deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"alias": "src", "deep": "src/deep", "ext": t.TempDir(), "self": ".", "state": ".ai-pm", "gone": "src/gone.go"} {
		if err := os.Symlink(filepath.FromSlash(target), at(link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ pattern, want, refused string }{
		{"alias/x.go", "src/x.go", ""},
		{"alias/*.go", "src/*.go", ""},
		{"alias/**", "src", ""},
		{"deep/../x", "src/x", ""},
		{"gone", "src/gone.go", ""},
		{"*/x", "*/x", ""},
		{"ext/x", "", "leads through a symbolic link to"},
		{"self", "", "names the whole project"},
		{"state/config.toml", "", "aipm's own state"},
	} {
		before := fileText(t, s.files.LeasesPath())
		l, err := s.TakeLease(context.Background(), cfg, LeaseRequest{Holder: "lead", Paths: []string{tc.pattern}})
		switch {
		case tc.refused == "" && (err != nil || len(l.Paths) != 1 || l.Paths[0] != tc.want):
			t.Errorf("take %s: %v, %v; want %s", tc.pattern, l.Paths, err, tc.want)
		case tc.refused != "" && (!errors.Is(err, storage.ErrInvalid) || !strings.Contains(err.Error(), tc.refused)):
			t.Errorf("take %s: %v; want refused saying %q", tc.pattern, err, tc.refused)
		case tc.refused != "" && fileText(t, s.files.LeasesPath()) != before:
			t.Errorf("the refused take of %s changed the leases", tc.pattern)
		}
	}
}

// fileText is path's content, "" when it does not exist.
func fileText(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(data)
}
