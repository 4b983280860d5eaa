// Package aipm holds what the module's root directory gives the program:
// the example config, embedded so that aipm config example can print it in
// any project (the file itself is only in the source tree).
package aipm

import _ "embed"

// ExampleConfig is config.example.toml: every key aipm reads, with its
// default and what it does.
//
//go:embed config.example.toml
var ExampleConfig string
