package fsstore

import (
	"aipm/fsstore/internal/storage"
	"fmt"
	"os"
	"time"
)

// Receiver states: what will happen to a message just sent (send_message's
// receiver_state). No silent success: a message nobody will take is said
// to be queued, with what would take it.
const (
	// ReceiverLive: a chat session of the receiver runs (its aipm serve
	// process is alive); it gets the message at its next get_next_action.
	ReceiverLive = "live"
	// ReceiverStarting: no chat session runs, but the running watcher
	// starts the receiver's configured command for it (or has started it).
	ReceiverStarting = "starting"
	// ReceiverQueued: nobody will take the message until someone acts;
	// Note says who could.
	ReceiverQueued = "queued"
)

// ReceiverState is what will happen to a message for one receiver.
type ReceiverState struct {
	Agent string `json:"agent_id"`
	State string `json:"receiver_state" jsonschema:"live (its chat session runs), starting (aipm watch is starting it) or queued (nobody will take it yet: see note)"`
	// Note is one sentence: why, and for queued what would take it.
	Note string `json:"note"`
}

// ReceiverStateOf says what will happen to a message for agent now: the
// one rule behind send_message's receiver_state. A session counts only
// when it is a chat session (messages are read by chat sessions) that is
// live and whose aipm serve process runs; a watcher start counts only when
// the watcher can start the agent (Startable: a command and a saved
// passkey) and a watcher holds the project's lock.
func (s *Store) ReceiverStateOf(cfg *storage.Config, agent string, now time.Time) ReceiverState {
	st := ReceiverState{Agent: agent}
	a, ok := cfg.Agent(agent)
	if !ok {
		st.State, st.Note = ReceiverQueued, fmt.Sprintf("%s is not configured in this project", agent)
		return st
	}
	if live, err := s.liveSessions(agent, storage.PurposeChat, now); err == nil {
		for _, ses := range live {
			if ses.Purpose == storage.PurposeChat {
				st.State, st.Note = ReceiverLive, fmt.Sprintf("%s's chat session is running and gets it at its next get_next_action", agent)
				return st
			}
		}
	}
	unstartable := s.startable(a)
	switch {
	case a.Type == storage.AgentHuman:
		st.State, st.Note = ReceiverQueued, fmt.Sprintf("%s is a human: it waits until they read it (aipm inbox --as %s, or aipm web)", agent, agent)
	case len(a.Command) == 0:
		st.State, st.Note = ReceiverQueued, fmt.Sprintf("%s has no chat session and no command in config.toml: it waits until %s authenticates (configure a command and run aipm watch to start it)", agent, agent)
	case unstartable != nil:
		st.State, st.Note = ReceiverQueued, fmt.Sprintf("%s has no chat session and aipm watch cannot start it: %v", agent, unstartable)
	case !s.watcherHeld():
		st.State, st.Note = ReceiverQueued, fmt.Sprintf("%s has no chat session and aipm watch is not running: it waits until someone runs aipm watch (which starts %s's command) or %s authenticates", agent, agent, agent)
	default:
		st.State, st.Note = ReceiverStarting, fmt.Sprintf("aipm watch is starting %s's command for it", agent)
	}
	return st
}

// Startable says whether aipm watch can start agent a's command, and
// returns the passkey file it hands the process: the agent needs a command
// and a saved passkey. The error says what is missing and what to run. The
// one rule of the watcher's starter and of ReceiverStateOf.
func (s *Store) Startable(a storage.Agent) (cred string, err error) {
	if len(a.Command) == 0 {
		return "", fmt.Errorf("%s has no command in config.toml", a.ID)
	}
	cred, err = s.files.CredentialPath(a.ID)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(cred); err != nil {
		return "", fmt.Errorf("%s has no saved passkey (run aipm agent passkey %s --save)", a.ID, a.ID)
	}
	return cred, nil
}

func (s *Store) startable(a storage.Agent) error {
	_, err := s.Startable(a)
	return err
}

// watcherHeld says whether a watcher holds the project's lock now.
func (s *Store) watcherHeld() bool {
	info, err := s.files.RunningWatcher()
	return err == nil && info != nil
}
