package fsstore

import (
	"aipm/fsstore/internal/storage"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// endRemoved is the end reason of a session whose agent was removed.
const endRemoved = "agent_removed"

// Reissued is a passkey ReissuePasskey issued, and where it saved it.
type Reissued struct {
	Passkey string
	// Saved is the credential file it was saved in for aipm watch ("" if
	// none); Replaced says a passkey was saved there before.
	Saved    string
	Replaced bool
}

// ReissuePasskey issues a new passkey for an AI agent, replacing the stored
// hash (the old passkey stops working at once), and returns it. It is how
// a clone of a project, or an agent added to config.toml by hand, gets a
// credential: passkey hashes are never committed. The new passkey is saved
// for aipm watch (SaveCredential) when save asks, and whenever a passkey
// was saved before: that one no longer works, and a watcher that started
// the agent with it would fail on authenticate.
func (s *Store) ReissuePasskey(ctx context.Context, agent string, save bool) (Reissued, error) {
	unlock, err := s.files.LockDir(ctx, s.files.Root())
	if err != nil {
		return Reissued{}, err
	}
	defer unlock()
	cfg, err := s.files.LoadConfig()
	if err != nil {
		return Reissued{}, err
	}
	if err := checkAIAgent(cfg, agent); err != nil {
		return Reissued{}, err
	}
	var out Reissued
	out.Replaced = s.SavedPasskeyOf(agent) != savedNone
	if out.Passkey, err = s.newPasskey(agent); err != nil {
		return Reissued{}, err
	}
	if save || out.Replaced {
		if out.Saved, err = s.SaveCredential(agent, out.Passkey); err != nil {
			return out, fmt.Errorf("a new passkey for %s was issued, but not saved for aipm watch: %w (run aipm agent passkey %s --save)", agent, err, agent)
		}
	}
	return out, nil
}

// checkAIAgent says whether agent is a configured AI agent.
func checkAIAgent(cfg *storage.Config, agent string) error {
	if err := storage.CheckAgentRef(cfg, agent, "agent"); err != nil {
		return err
	}
	if a, _ := cfg.Agent(agent); a.Type != storage.AgentAI {
		return storage.Kindf(errNotAI, "agent %q is a human: humans need no passkey, they act through the CLI with --as %s", agent, agent)
	}
	return nil
}

// RemovedAgent is what RemoveAgent did.
type RemovedAgent struct {
	ID string `json:"id"`
	// OpenTasks are the agent's tasks not done or cancelled; they keep
	// their assignee (a removal with force leaves them for a person).
	OpenTasks []string `json:"openTasks"`
	// EndedSessions are the live sessions a forced removal ended.
	EndedSessions []string `json:"endedSessions"`
}

// RemoveAgent deletes the agent's [[agents]] entry from config.toml (the
// rest of the file is kept byte for byte) through EditConfig, then its
// passkey hash. Its chat history stays. It refuses, with ErrInUse, while the
// agent has open tasks or live sessions, unless force; with force its live
// sessions end. An agent that is another's parent is never removed: the
// config would not be valid without it.
func (s *Store) RemoveAgent(ctx context.Context, agent string, force bool) (RemovedAgent, error) {
	out := RemovedAgent{ID: agent, OpenTasks: []string{}, EndedSessions: []string{}}
	cfg, err := s.files.LoadConfig()
	if err != nil {
		return out, fmt.Errorf("the config is invalid, fix it first: %w", err)
	}
	if err := removable(cfg, agent, s.files.Rel(s.files.ConfigPath())); err != nil {
		return out, err
	}
	sessions, err := s.agentInUse(agent, &out)
	if err != nil {
		return out, err
	}
	if (len(out.OpenTasks) > 0 || len(sessions) > 0) && !force {
		return out, storage.Kindf(ErrInUse, "agent %q has %s: finish or reassign them first, or pass --force to remove it anyway", agent, inUse(out.OpenTasks, sessions))
	}
	err = s.EditConfig(ctx, func(old []byte, cfg *storage.Config) ([]byte, error) {
		if err := removable(cfg, agent, s.files.Rel(s.files.ConfigPath())); err != nil {
			return nil, err
		}
		return withoutAgentEntry(old, cfg, agent)
	})
	if err != nil {
		return out, err
	}
	for _, ses := range sessions {
		if _, err := s.EndSession(ctx, ses.ID, endRemoved); err != nil {
			return out, fmt.Errorf("agent %q removed, but its session %s did not end: %w", agent, ses.ID, err)
		}
		out.EndedSessions = append(out.EndedSessions, ses.ID)
	}
	if path, err := s.files.PasskeyPath(agent); err == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return out, fmt.Errorf("agent %q removed, but its passkey hash was not: %w", agent, err)
		}
	}
	return out, nil
}

// removable checks that agent is in cfg and no other agent's parent.
func removable(cfg *storage.Config, agent, configName string) error {
	if err := storage.CheckAgentRef(cfg, agent, "agent"); err != nil {
		return err
	}
	var children []string
	for _, a := range cfg.Agents {
		if a.Parent == agent {
			children = append(children, a.ID)
		}
	}
	if len(children) > 0 {
		return fmt.Errorf("agent %q is the parent of %s: give them another parent in %s first", agent, strings.Join(children, ", "), configName)
	}
	return nil
}

// agentInUse records agent's open tasks in out and returns its live
// sessions.
func (s *Store) agentInUse(agent string, out *RemovedAgent) ([]Session, error) {
	tasks, _, _, err := s.Tasks(TaskFilter{Assignee: agent, Open: true})
	if err != nil {
		return nil, err
	}
	for _, t := range tasks {
		out.OpenTasks = append(out.OpenTasks, t.ID)
	}
	live, err := s.LiveSessions(time.Now())
	if err != nil {
		return nil, err
	}
	var sessions []Session
	for _, ses := range live {
		if ses.Agent == agent {
			sessions = append(sessions, ses)
		}
	}
	return sessions, nil
}

// inUse says what keeps an agent in use: "2 open tasks (...) and 1 live
// session (chat)".
func inUse(openTasks []string, sessions []Session) string {
	var what []string
	if n := len(openTasks); n > 0 {
		what = append(what, fmt.Sprintf("%s (%s)", countNoun(n, "open task"), strings.Join(openTasks, ", ")))
	}
	if n := len(sessions); n > 0 {
		var purposes []string
		for _, ses := range sessions {
			purposes = append(purposes, ses.Purpose)
		}
		what = append(what, fmt.Sprintf("%s (%s)", countNoun(n, "live session"), strings.Join(purposes, ", ")))
	}
	return strings.Join(what, " and ")
}

// withoutAgentEntry returns data without the [[agents]] table of agent:
// from its header to the line before the next table header (or the end).
func withoutAgentEntry(data []byte, cfg *storage.Config, agent string) ([]byte, error) {
	index := slices.IndexFunc(cfg.Agents, func(a storage.Agent) bool { return a.ID == agent })
	start := storage.NewLocator(data).Section("agents", index) // 1-based
	lines := bytes.SplitAfter(data, []byte("\n"))
	if index < 0 || start < 1 || start > len(lines) || storage.ArrayHeader().FindSubmatch(lines[start-1]) == nil {
		return nil, fmt.Errorf("cannot find the [[agents]] entry of %q in the config: remove it by hand", agent)
	}
	end := start // index of the first line after the entry: the next header other than its own subtables ([agents.env])
	for ; end < len(lines); end++ {
		m := storage.ArrayHeader().FindSubmatch(lines[end])
		if m == nil {
			m = storage.TableHeader().FindSubmatch(lines[end])
		}
		if m != nil && !bytes.HasPrefix(m[1], []byte("agents.")) {
			break
		}
	}
	var out bytes.Buffer
	for i, l := range lines {
		if i < start-1 || i >= end {
			out.Write(l)
		}
	}
	return out.Bytes(), nil
}

func countNoun(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
