// Package watcher turns file changes under .ai-pm/ into reactions. Events
// are hints and files are the truth: a woken reader re-reads the file from
// its cursor. Wake (wake.go) lets one process wait for changes in a few
// directories through a single fsnotify watcher, shared by all its waiters;
// `aipm serve` uses it for get_next_action and `aipm log --follow` for
// following a chat log.
package watcher
