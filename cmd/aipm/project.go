package main

import (
	"fmt"
	"os"

	"aipm/fsstore"
)

// projectDir finds the project like git finds its repository: --dir, else
// AIPM_DIR, else the nearest directory upwards that holds .ai-pm/.
func (e *env) projectDir() (string, error) {
	if e.dir != "" {
		return e.dir, nil
	}
	if d := e.getenv("AIPM_DIR"); d != "" {
		return d, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	return wd, nil
}

// open opens the project's store and its config; the config's durability
// applies to every write. Outside a project it fails with exit code 2.
func (e *env) open() (*fsstore.Store, *fsstore.Config, error) {
	start, err := e.projectDir()
	if err != nil {
		return nil, nil, err
	}
	dir := start
	if e.dir == "" && e.getenv("AIPM_DIR") == "" {
		if dir, err = fsstore.FindProject(start); err != nil {
			return nil, nil, &exitError{code: 2, err: err}
		}
	}
	store, err := fsstore.Open(dir)
	if err != nil {
		return nil, nil, &exitError{code: 2, err: err}
	}
	cfg, err := store.LoadConfig()
	if err != nil {
		return store, nil, err
	}
	store.SetDurability(cfg.Defaults.Durability != fsstore.DurableNone)
	return store, cfg, nil
}
