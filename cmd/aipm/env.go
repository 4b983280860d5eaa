package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"aipm/fsstore"
	"aipm/internal/launch"
	"aipm/internal/table"
)

// env is what every command may use: the process's streams and
// environment, and the root's persistent flags. Nothing global.
type env struct {
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	dir    string // --dir
	utc    bool   // --utc
	colour bool   // stdout is a terminal and NO_COLOR is unset
	width  int    // how wide a table may be (table.Width), 0 for no limit
	// warned is the config whose warnings were last printed (warnConfig).
	warned *fsstore.Config
	// helpErr is the usage mistake found while cobra showed help
	// (helpFunc), which run returns.
	helpErr error
	// root: this process runs as root, as aipm watch then does (Claude
	// Code refuses --access full to root).
	root bool
}

// effectiveUID is the process's effective user id (the tests' aipm plays
// another: main_test.go).
var effectiveUID = os.Geteuid

func newEnv(getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) *env {
	return &env{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr,
		colour: table.IsTerminal(stdout) && getenv("NO_COLOR") == "", width: table.Width(getenv, stdout), root: effectiveUID() == 0}
}

// host is the machine aipm watch runs on, as this command sees it.
func (e *env) host() launch.Host { return launch.Host{Getenv: e.getenv, Root: e.root} }

// projectDir is where a new project goes: --dir, else AIPM_DIR, else the
// working directory.
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

// findProject finds the project like git finds its repository: --dir or
// AIPM_DIR as given, else the nearest directory upwards that holds .ai-pm/.
// No project is a usage mistake (exit 2).
func (e *env) findProject() (string, error) {
	dir, err := fsstore.LocateProject(e.dir, e.getenv("AIPM_DIR"))
	return dir, asUsage(err)
}

// openStore opens the project's store without reading its config. A
// project on a network filesystem is refused with exit 1, not as a usage
// mistake.
func (e *env) openStore() (*fsstore.Store, error) {
	return e.openStoreBy(fsstore.Open)
}

func (e *env) openStoreBy(open func(string) (*fsstore.Store, error)) (*fsstore.Store, error) {
	dir, err := e.findProject()
	if err != nil {
		return nil, err
	}
	store, err := open(dir)
	if errors.Is(err, fsstore.ErrNetworkFilesystem) {
		return nil, err
	}
	return store, asUsage(err)
}

// open opens the project's store and its config; the config's durability
// applies to every write. A store without a valid config is returned with
// the config's error (doctor reports it).
func (e *env) open() (*fsstore.Store, *fsstore.Config, error) {
	return e.openBy(fsstore.Open)
}

// openBy is open with the store opened by open: fsstore.OpenToCheck for
// doctor, which reports a network filesystem rather than refusing it.
func (e *env) openBy(open func(string) (*fsstore.Store, error)) (*fsstore.Store, *fsstore.Config, error) {
	store, err := e.openStoreBy(open)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := store.LoadConfig()
	if err != nil {
		return store, nil, err
	}
	e.warnConfig(cfg)
	return store, cfg, nil
}

// openAs opens the project and resolves who acts (see actor).
func (e *env) openAs(as string) (*fsstore.Store, *fsstore.Config, string, error) {
	store, cfg, err := e.open()
	if err != nil {
		return nil, nil, "", err
	}
	by, err := e.actor(cfg, as)
	if err != nil {
		return nil, nil, "", err
	}
	return store, cfg, by, nil
}

// actor is who a CLI action is credited to: --as, else AIPM_AS, else the
// project's only human (fsstore.Config.Actor). Never an invented id.
func (e *env) actor(cfg *fsstore.Config, as string) (string, error) {
	if as == "" {
		as = e.getenv("AIPM_AS")
	}
	by, err := cfg.Actor(as)
	return by, asUsage(err)
}

// human resolves the actor and checks that it is a human; what says what
// the command does for a human.
func (e *env) human(cfg *fsstore.Config, as, what string) (string, error) {
	by, err := e.actor(cfg, as)
	if err != nil {
		return "", err
	}
	if a, _ := cfg.Agent(by); a.Type != fsstore.AgentHuman {
		return "", usageError("%q is an AI agent, not a human: %s; pass --as with a human (see aipm agent list)", by, what)
	}
	return by, nil
}

// taskID resolves a task id argument: the whole id or a unique prefix,
// with or without tsk_. Anything that names no single task is a usage
// mistake (exit 2).
func taskID(store *fsstore.Store, arg string) (string, error) {
	id, err := store.ResolveID(fsstore.Tasks, arg)
	return id, asUsage(err)
}

// taskIDs resolves task ids or unique starts of them (what names the flag
// in the message); none gives none. One of keep is taken as written.
func taskIDs(store *fsstore.Store, args []string, what string, keep ...string) ([]string, error) {
	var ids []string
	for _, a := range args {
		id, err := strings.TrimSpace(a), error(nil)
		if !slices.Contains(keep, id) {
			id, err = taskID(store, id)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// agentRef checks that id, if given, names an agent of the project (exit 2
// otherwise); what names the argument in the message.
func agentRef(cfg *fsstore.Config, id, what string) error {
	if id == "" {
		return nil
	}
	if err := fsstore.CheckAgentID(id); err != nil {
		if what == "agent" { // the message already says "agent id"
			return asUsage(err)
		}
		return usageError("%s: %v", what, err)
	}
	if _, ok := cfg.Agent(id); !ok {
		return usageError("%s %q is not an agent of this project: see aipm agent list", what, id)
	}
	return nil
}

// aiAgent checks that id names an AI agent of the project.
func aiAgent(cfg *fsstore.Config, id, why string) error {
	if err := agentRef(cfg, id, "agent"); err != nil {
		return err
	}
	if a, _ := cfg.Agent(id); a.Type != fsstore.AgentAI {
		return usageError("agent %q is a human: %s", id, why)
	}
	return nil
}

// warnConfig prints, in one line on stderr, what the config holds that aipm
// ignores (an unknown key: a typo, most often); the command goes on. A
// command that reads the config again (status --watch) says only what is
// new since it last did.
func (e *env) warnConfig(cfg *fsstore.Config) {
	warnings := fsstore.NewWarnings(e.warned, cfg)
	e.warned = cfg
	if len(warnings) == 0 {
		return
	}
	more := ""
	if n := len(warnings) - 1; n > 0 {
		more = fmt.Sprintf(" (and %d more: aipm doctor lists them)", n)
	}
	fmt.Fprintf(e.stderr, "aipm: warning: %v%s\n", warnings[0], more)
}

// warn prints msg, if any, as a warning on stderr; a warning never fails
// a command.
func warn(e *env, msg string) {
	if msg != "" {
		fmt.Fprintf(e.stderr, "aipm: warning: %s\n", msg)
	}
}

// warnSkipped is the warning of a listing that passed over files it could
// not read (task list, status): each is named, with what to do.
func warnSkipped[T any](e *env, skipped []T) {
	for _, p := range skipped {
		fmt.Fprintf(e.stderr, "aipm: warning: skipped %v: fix it by hand (aipm doctor lists every problem)\n", p)
	}
}
