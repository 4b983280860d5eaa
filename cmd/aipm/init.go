package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"aipm/fsstore"
)

type initOptions struct {
	e    *env
	Name string
	JSON bool
}

func newCmdInit(e *env, runF func(*initOptions) error) *cobra.Command {
	o := &initOptions{e: e}
	c := &cobra.Command{
		Use:   "init [--name NAME]",
		Short: "Create .ai-pm/ in the current directory (or --dir)",
		Long: `Create the project's .ai-pm/ directory: a config.toml (the project and its
agents) and a .gitignore that keeps runtime state (sessions, triggers, logs,
passkey hashes) out of git. An existing project is left untouched.`,
		Example: "  aipm init --name myproject\n  aipm init --dir ../other",
		Args:    argsNone,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(o)
			}
			return initRun(o)
		},
	}
	c.Flags().StringVar(&o.Name, "name", "", "the project's name (default: the directory's name)")
	c.Flags().BoolVar(&o.JSON, "json", false, "print {dir, name, id} as JSON")
	return c
}

func initRun(o *initOptions) error {
	dir, err := o.e.projectDir()
	if err != nil {
		return err
	}
	store, err := fsstore.Init(dir, o.Name)
	if err != nil {
		return err
	}
	if !o.JSON {
		_, err = fmt.Fprintf(o.e.stdout, "initialized %s\n", fsstore.DirName)
		return err
	}
	cfg, err := store.LoadConfig()
	if err != nil {
		return err
	}
	return writeJSON(o.e.stdout, map[string]string{"dir": store.ProjectDir(), "name": cfg.Project.Name, "id": cfg.Project.ID})
}
