// Package watcher is `aipm watch`: it turns file changes under .ai-pm/ into
// reactions (triggers, interrupts for hand edits, deadlines) and starts the
// agents' commands. Events are hints and files are the truth: every pass
// re-reads what changed through fsstore, where every rule lives.
package watcher
