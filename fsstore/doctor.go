package fsstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"aipm/fsstore/internal/storage"
	"aipm/internal/lockedfile"
)

// quarantinedLine is one line that repair moved aside, with where it was.
type quarantinedLine struct {
	Source        string    `json:"source"`
	Line          int       `json:"line"`
	Offset        int64     `json:"offset"`
	Reason        string    `json:"reason"`
	Content       string    `json:"content"`
	QuarantinedAt time.Time `json:"quarantinedAt"`
}

// configProblems is what is wrong with config.toml and the passkeys it
// implies.
func (s *Store) configProblems() []storage.Problem {
	rel := s.files.Rel(s.files.ConfigPath())
	cfg, err := s.files.LoadConfig()
	if err != nil {
		errs := []error{err}
		if data, rerr := lockedfile.ReadFile(s.files.ConfigPath()); rerr == nil {
			if _, all := storage.CheckConfig(rel, data); len(all) > 0 {
				errs = all // every error at once, not the first alone
			}
		}
		return configErrorProblems(rel, errs)
	}
	problems := configErrorProblems(rel, cfg.Warnings)
	if len(cfg.Agents) == 0 {
		problems = append(problems, storage.Problem{Path: rel, Reason: "the config names no agents, so no message can be sent and no agent started: add one with aipm agent add (aipm config example shows the [[agents]] entries)"})
	}
	return append(problems, s.passkeyProblems(cfg)...)
}

// configErrorProblems turns config errors (rel:LINE: what) into problems.
func configErrorProblems(rel string, errs []error) []storage.Problem {
	var out []storage.Problem
	for _, err := range errs {
		p := storage.Problem{Path: rel, Reason: err.Error()}
		var le *storage.LineError
		if errors.As(err, &le) {
			p.Line, p.Reason = le.Line, le.Err.Error()
		}
		out = append(out, p)
	}
	return out
}

// checkDir is doctor's look at a directory: quarantine/, logs/ and .spare/
// (empty files made ahead for atomic writes) are skipped, and a directory
// under agents/ must be named by an agent id.
func (s *Store) checkDir(path, name string) ([]storage.Problem, error) {
	if path != s.files.Root() && (name == "quarantine" || name == "logs") || s.files.UnwatchedDir(path) {
		return nil, fs.SkipDir
	}
	if filepath.Dir(path) == s.files.AgentsDir() {
		if err := storage.CheckAgentID(name); err != nil {
			return []storage.Problem{{Path: s.files.Rel(path), Reason: "directory name is not an agent id: " + err.Error()}}, fs.SkipDir
		}
	}
	return nil, nil
}

// checkFile is doctor's look at one file: a stale temp file, a JSONL log,
// or a JSON document and its schema.
func (s *Store) checkFile(ctx context.Context, path string, d fs.DirEntry, repair bool) ([]storage.Problem, error) {
	rel, name := s.files.Rel(path), d.Name()
	switch {
	case strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-"):
		if !isStale(d) {
			return nil, nil // a write in progress: its writer owns it
		}
		p := storage.Problem{Path: rel, Reason: "stale temporary file left by an interrupted write", Repairable: true}
		if repair {
			p.Repaired = os.Remove(path) == nil
		}
		return []storage.Problem{p}, nil
	case strings.HasSuffix(name, ".jsonl"):
		return s.checkJSONL(ctx, path, repair)
	case strings.HasSuffix(name, ".json"):
		return s.checkJSONDoc(path), nil
	}
	return nil, nil
}

// checkJSONDoc checks that a JSON document parses and, where its place
// says what it is, that it holds what that kind of document must.
func (s *Store) checkJSONDoc(path string) []storage.Problem {
	rel := s.files.Rel(path)
	data, err := lockedfile.ReadFile(path)
	if err != nil {
		return []storage.Problem{{Path: rel, Reason: fmt.Sprintf("read %s: %v", rel, err)}}
	}
	var v map[string]any
	if err := storage.DecodeDoc(rel, data, &v); err != nil {
		var le *storage.LineError
		if errors.As(err, &le) {
			return []storage.Problem{{Path: rel, Line: le.Line, Reason: "invalid JSON document: " + le.Err.Error() + byHand}}
		}
		return []storage.Problem{{Path: rel, Reason: err.Error()}}
	}
	problems := s.longFieldProblems(path, data)
	if path == s.files.LeasesPath() {
		return append(problems, s.leasesDocProblems(rel, data)...)
	}
	check := s.schemaOf(path)
	if check == nil {
		return problems
	}
	for _, kr := range check(data) {
		problems = append(problems, storage.Problem{Path: rel, Line: jsonKeyLine(data, kr[0]), Reason: kr[1] + byHand})
	}
	return problems
}

// Doctor reads every file of the layout and returns what is wrong. With
// repair, torn tails and invalid JSONL lines move to quarantine/ (valid lines
// are left byte for byte), stale temp files are removed, the holders of
// leases broken but not told are told (untoldBreakProblems), and so are the
// requesters of tasks that ended untold (untoldTaskProblems); damaged JSON
// documents and config errors are only reported, because only a person knows
// what they should say. On a network filesystem it reports that first and
// repairs nothing (another host may be writing the lines it would move).
func (s *Store) Doctor(ctx context.Context, repair bool) ([]storage.Problem, error) {
	problems, remote := s.files.FilesystemProblems()
	repair = repair && !remote
	problems = append(problems, s.configProblems()...)
	err := filepath.WalkDir(s.files.Root(), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			problems = append(problems, storage.Problem{Path: s.files.Rel(path), Reason: err.Error()})
			return nil
		}
		if p := notRegular(s.files.Rel(path), d); p != nil {
			problems = append(problems, *p)
			return nil
		}
		if d.IsDir() {
			p, skip := s.checkDir(path, d.Name())
			problems = append(problems, p...)
			return skip
		}
		ps, err := s.checkFile(ctx, path, d, repair)
		problems = append(problems, ps...)
		return err
	})
	if err != nil {
		return problems, fmt.Errorf("doctor: %w", err)
	}
	rules, err := s.taskRuleProblems()
	problems = append(problems, rules...)
	if err != nil {
		return problems, fmt.Errorf("doctor: %w", err)
	}
	indexed, err := s.sessionIndexProblems(ctx, repair)
	problems = append(problems, indexed...)
	if err != nil {
		return problems, fmt.Errorf("doctor: %w", err)
	}
	mirror, err := s.checkMirror(ctx, repair)
	problems = append(problems, mirror...)
	if err != nil {
		return problems, fmt.Errorf("doctor: %w", err)
	}
	untold, err := s.untoldBreakProblems(ctx, repair)
	problems = append(problems, untold...)
	if err != nil {
		return problems, fmt.Errorf("doctor: %w", err)
	}
	ended, err := s.untoldTaskProblems(ctx, repair)
	problems = append(problems, ended...)
	if err != nil {
		return problems, fmt.Errorf("doctor: %w", err)
	}
	return problems, nil
}

// notRegular is the problem of an entry aipm never opens: a symbolic link
// (a link to a directory is not walked into) or anything but a regular file
// or a directory (a FIFO, a device, a socket). Everyone else skips them.
func notRegular(rel string, d fs.DirEntry) *storage.Problem {
	switch t := d.Type(); {
	case t&fs.ModeSymlink != 0:
		return &storage.Problem{Path: rel, Reason: lockedfile.ErrLink.Error() + ": remove it"}
	case !t.IsRegular() && !t.IsDir():
		return &storage.Problem{Path: rel, Reason: lockedfile.ErrNotRegular.Error() + ": remove it"}
	}
	return nil
}

// byHand ends the reason of a problem repair cannot fix.
const byHand = " (fix it by hand: only a person knows what it should say; aipm never rewrites it)"

// isStale says a temp file is old enough that no writer still owns it.
func isStale(d fs.DirEntry) bool {
	fi, err := d.Info()
	return err == nil && time.Since(fi.ModTime()) > time.Minute
}

// checkJSONL reports the invalid lines and torn tail of one JSONL file, and
// with repair moves them to quarantine. It reads under the file's own lock,
// so a tail it sees is not a write in progress.
func (s *Store) checkJSONL(ctx context.Context, path string, repair bool) ([]storage.Problem, error) {
	rel := s.files.Rel(path)
	data, held, err := lockedfile.ReadLocked(ctx, path, storage.ModeFile)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", rel, err)
	}
	problems, err := s.quarantineBad(ctx, path, held, data, repair)
	return append(problems, s.longFieldProblems(path, data)...), err
}

// quarantineBad reports the invalid lines and torn tail of the JSONL file
// at path, read as data from the inode held, and with repair moves them
// to quarantine.
func (s *Store) quarantineBad(ctx context.Context, path string, held os.FileInfo, data []byte, repair bool) ([]storage.Problem, error) {
	rel := s.files.Rel(path)
	validate := lockedfile.InvalidLine
	switch filepath.Base(path) {
	case "chat.jsonl":
		validate = invalidMessageLine
	case "notifications.jsonl":
		validate = invalidNotificationLine
	}
	bad, keep := scanBad(rel, data, validate)
	if len(bad) == 0 {
		return nil, nil
	}
	var problems []storage.Problem
	for _, q := range bad {
		problems = append(problems, storage.Problem{Path: rel, Line: q.Line, Reason: q.Reason, Repairable: true})
	}
	if !repair {
		return problems, nil
	}
	// Quarantine first (a new file of its own, so no second lock is held),
	// then rewrite the source without the bad lines. If anything appended
	// meanwhile, the rewrite keeps it: only the exact bad byte ranges go.
	qname := fmt.Sprintf("%s-%s.jsonl", time.Now().UTC().Format("20060102T150405.000000000Z"), strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(rel, storage.DirName+string(filepath.Separator)), ".jsonl"), string(filepath.Separator), "_"))
	var qbuf bytes.Buffer
	now := time.Now().UTC()
	for _, q := range bad {
		q.QuarantinedAt = now
		line, _ := json.Marshal(q)
		qbuf.Write(line)
		qbuf.WriteByte('\n')
	}
	if err := s.files.MkdirAll(s.files.QuarantineDir()); err != nil {
		return problems, fmt.Errorf("quarantine: %w", err)
	}
	if err := storage.WriteFileAtomic(filepath.Join(s.files.QuarantineDir(), qname), qbuf.Bytes(), storage.ModeFile, true); err != nil {
		return problems, fmt.Errorf("quarantine %s: %w", rel, err)
	}
	switch err := lockedfile.RewriteKeeping(ctx, path, held, data, keep, true); {
	case errors.Is(err, lockedfile.ErrChanged):
		return problems, fmt.Errorf("repair %s: the file changed while doctor ran; run aipm doctor --repair again", rel)
	case err != nil:
		return problems, fmt.Errorf("repair %s: %w", rel, err)
	}
	for i := range problems {
		problems[i].Repaired = true
		problems[i].Reason += " (moved to " + filepath.Join(storage.DirName, "quarantine", qname) + ")"
	}
	return problems, nil
}

// scanBad lists the invalid lines and torn tail of data, as quarantine
// records, and the byte ranges of everything else.
func scanBad(rel string, data []byte, invalid func([]byte) string) ([]quarantinedLine, [][2]int) {
	found, keep := lockedfile.Scan(data, invalid)
	bad := make([]quarantinedLine, len(found))
	for i, b := range found {
		bad[i] = quarantinedLine{Source: rel, Line: b.Line, Offset: b.Offset, Reason: b.Reason, Content: string(b.Content)}
	}
	return bad, keep
}

// SortProblems orders problems by path and line, for stable output.
func SortProblems(ps []storage.Problem) {
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].Path != ps[j].Path {
			return ps[i].Path < ps[j].Path
		}
		return ps[i].Line < ps[j].Line
	})
}

// invalidMessageLine says why a chat line is not a message, or "".
func invalidMessageLine(b []byte) string {
	if reason := lockedfile.InvalidLine(b); reason != "" {
		return reason
	}
	if _, err := decodeMessage(b); err != nil {
		return err.Error()
	}
	return ""
}
