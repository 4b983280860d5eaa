package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"aipm"
)

func newCmdConfig(e *env) *cobra.Command {
	return newNoun("config", "Show the example config.toml",
		`.ai-pm/config.toml holds the project, its defaults and its agents; it is edited
by hand (and by aipm agent add, set and remove). aipm config example prints a
complete example with every key aipm reads, its default and what it does.`,
		`  aipm config example
  aipm config example > /tmp/example.toml`,
		newCmdConfigExample(e),
	)
}

func newCmdConfigExample(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "example",
		Short: "Print an example config.toml with every key aipm reads",
		Long: `Print an example config.toml: every key aipm reads, with its default and what it
does. Use it to check a key's spelling when aipm warns about an unknown key, or
as a starting point. It needs no project.`,
		Example: `  aipm config example | grep -A2 wait_seconds`,
		Args:    argsNone,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprint(e.stdout, aipm.ExampleConfig)
			return err
		},
	}
}
