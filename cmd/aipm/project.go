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

// findProject returns the project directory: --dir or AIPM_DIR as given,
// else the nearest directory upwards that holds .ai-pm/ (exit code 2 if none).
func (e *env) findProject() (string, error) {
	start, err := e.projectDir()
	if err != nil {
		return "", err
	}
	if e.dir != "" || e.getenv("AIPM_DIR") != "" {
		return start, nil
	}
	dir, err := fsstore.FindProject(start)
	if err != nil {
		return "", &exitError{code: 2, err: err}
	}
	return dir, nil
}

// open opens the project's store and its config; the config's durability
// applies to every write. Outside a project it fails with exit code 2.
func (e *env) open() (*fsstore.Store, *fsstore.Config, error) {
	dir, err := e.findProject()
	if err != nil {
		return nil, nil, err
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
