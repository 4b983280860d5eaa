package fsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"aipm/fsstore/internal/storage"
)

// EnvLaunchID names one run of an agent's client started by aipm launch
// (a run id: aipm watch's AIPM_RUN_ID, or a new one when aipm launch runs
// by hand). The hooks the client runs inherit it and record under it the
// tool calls they deny (RecordDenial); aipm launch reads them when the
// client has exited (TakeDenials), to tell aipm's own denials from the
// client's permission refusals.
const EnvLaunchID = "AIPM_LAUNCH_ID"

// Why aipm's hook denied a tool call (Denial.Why).
const (
	// DeniedInterrupt: an interrupt waited for the session (a human
	// blocked or cancelled its task, or stopped it).
	DeniedInterrupt = "interrupt"
	// DeniedLease: a file the call writes is under another's exclusive
	// lease.
	DeniedLease = "lease"
	// DeniedUnreadable: the agent's notifications or the leases could not
	// be read, so the hook refused the call (it fails closed).
	DeniedUnreadable = "unreadable"
)

// Denial is one tool call aipm's hook denied, a line of
// logs/<agent>/denials.<run>.jsonl.
type Denial struct {
	// ToolUseID is the client's id of the call (Claude Code's tool_use_id,
	// Codex's call id), as the hook's input gave it.
	ToolUseID string `json:"toolUseId,omitempty"`
	Tool      string `json:"tool"`
	Why       string `json:"why"`
	// Holder and Path are the lease's holder and the leased path
	// (DeniedLease).
	Holder string    `json:"holder,omitempty"`
	Path   string    `json:"path,omitempty"`
	At     time.Time `json:"at"`
}

// RecordDenial appends d to the denials of agent's client run run (its
// EnvLaunchID): one small append, made only when a hook denies.
func (rt RunTable) RecordDenial(ctx context.Context, agent, run string, d Denial) error {
	s := rt.s
	path, err := s.files.DenialsPath(agent, run)
	if err != nil {
		return err
	}
	if d.At.IsZero() {
		d.At = time.Now().UTC()
	}
	if err := s.files.MkdirAll(filepath.Dir(path)); err != nil {
		return fmt.Errorf("record a denied tool call: %w", err)
	}
	if err := s.files.AppendJSONL(ctx, path, d); err != nil {
		return fmt.Errorf("record a denied tool call: %w", err)
	}
	return nil
}

// TakeDenials returns the tool calls aipm's hooks denied in agent's
// client run run, oldest first, and removes their record: what aipm
// launch reads once its client has exited. A line that cannot be read is
// skipped.
func (rt RunTable) TakeDenials(agent, run string) ([]Denial, error) {
	s := rt.s
	path, err := s.files.DenialsPath(agent, run)
	if err != nil {
		return nil, err
	}
	recs, _, _, err := storage.ReadAll(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the denied tool calls of %s: %w", s.files.Rel(path), err)
	}
	var out []Denial
	for _, r := range recs {
		var d Denial
		if json.Unmarshal(r.Data, &d) == nil {
			out = append(out, d)
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return out, fmt.Errorf("remove %s: %w", s.files.Rel(path), err)
	}
	return out, nil
}
