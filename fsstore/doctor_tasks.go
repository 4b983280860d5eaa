package fsstore

import (
	"aipm/fsstore/internal/storage"
	"fmt"
)

// taskRuleProblems is what doctor finds against the task rules rather than
// the task schema: a status edited by hand to one aipm does not allow
// (Task.IllegalEdit), an open task assigned to an agent that is no
// longer in config.toml (nobody works on it), and dependencies that can
// never be met (dependencyProblems). Unreadable task files and
// config.toml are reported elsewhere.
func (s *Store) taskRuleProblems() ([]storage.Problem, error) {
	tasks, _, _, err := s.Tasks(TaskFilter{})
	if err != nil {
		return nil, err
	}
	cfg, cfgErr := s.files.LoadConfig()
	var problems []storage.Problem
	for _, t := range tasks {
		path, _ := s.files.DocPath(storage.Tasks, t.ID)
		if why := t.illegalEdit(); why != "" {
			problems = append(problems, storage.Problem{Path: s.files.Rel(path), Reason: why})
		}
		if cfgErr != nil || t.Assignee == "" || !StatusOpen(t.Status) || storage.CheckAgentID(t.Assignee) != nil {
			continue // a bad id is the schema check's
		}
		if _, ok := cfg.Agent(t.Assignee); !ok {
			fix := fmt.Sprintf("assign it with aipm task assign %s AGENT", t.ID)
			if t.Status == StatusInProgress {
				fix = fmt.Sprintf("stop it with aipm task status %s todo, then assign it with aipm task assign %s AGENT", t.ID, t.ID)
			}
			problems = append(problems, storage.Problem{Path: s.files.Rel(path), Reason: fmt.Sprintf("the task is %s and assigned to %q, who is not an agent of this project (not in config.toml): nobody will work on it; %s", t.Status, t.Assignee, fix)})
		}
	}
	deps, err := s.dependencyProblems()
	return append(problems, deps...), err
}
