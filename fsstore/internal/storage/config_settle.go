package storage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"aipm/internal/lockedfile"
)

// A config.toml saved in place (cat new > config.toml, most editors'
// "write") is empty, or half written, for a moment. Readers never take that
// moment for the config: an empty file is an error (ParseConfig), a read
// that fails or finds no agents is read again until the file settles
// (readSettledConfig), and a re-read config with no agents never replaces
// one in force that has some (Adopt).

// settleTries and settleGap bound the wait for a file being saved: two
// reads settleGap apart that agree end it, and it gives up after
// settleTries reads (about a second) with what it has.
const (
	settleTries = 20
	settleGap   = 50 * time.Millisecond
)

// loadSettledConfig reads and parses config.toml. A read that parses with
// at least one agent is taken at once (no wait in the common case);
// otherwise the file is read again settleGap later until two reads agree,
// at most settleTries times, so a save in progress is not taken for the
// config.
func (s *Files) loadSettledConfig() (*Config, error) {
	data, err := lockedfile.ReadFile(s.ConfigPath())
	cfg, perr := s.parseRead(data, err)
	for i := 0; i < settleTries && (perr != nil || len(cfg.Agents) == 0); i++ {
		time.Sleep(settleGap)
		again, err2 := lockedfile.ReadFile(s.ConfigPath())
		settled := bytes.Equal(data, again) && (err == nil) == (err2 == nil)
		data, err = again, err2
		if settled {
			break
		}
		cfg, perr = s.parseRead(data, err)
	}
	return cfg, perr
}

// parseRead is the config of one read of config.toml, or what is wrong.
func (s *Files) parseRead(data []byte, err error) (*Config, error) {
	if errors.Is(err, os.ErrNotExist) {
		return nil, Kindf(ErrNotFound, "%s is missing: run aipm init, or restore it", s.Rel(s.ConfigPath()))
	}
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return ParseConfig(s.Rel(s.ConfigPath()), data)
}

// errEmptyConfig is ParseConfig's error for a file with nothing in it.
func errEmptyConfig(name string) error {
	return &LineError{Path: name, Line: 1, Err: errors.New("the config is empty (a save in progress, or a lost file): restore it; aipm config example prints a complete example")}
}

// emptyConfig says whether data holds no TOML at all (only blanks and
// comments).
func emptyConfig(data []byte) bool {
	for _, line := range strings.Split(string(data), "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// Adopt is the one rule of replacing the config in force (old; nil: none
// yet) by one just re-read (next): a config with no agents never replaces
// one with agents, since every agent's messages, sends and triggers would
// stop at once; that is a save in progress or a mistake, and the error says
// so.
func Adopt(old, next *Config) error {
	if old != nil && len(old.Agents) > 0 && len(next.Agents) == 0 {
		return fmt.Errorf("%s now names no agents (a save in progress, or the [[agents]] entries were lost); keeping the %d agents in force: restore the [[agents]] entries (aipm config example shows them)", configName, len(old.Agents))
	}
	return nil
}

// configName is config.toml as messages name it.
const configName = DirName + "/config.toml"
