// Package fsstore holds the rules of a project's .ai-pm/ directory: what a
// message, a task, a session, a conversation, a delegation, a notification
// and a chat marker are and may do, each rule in one place, called by the MCP
// tools, the CLI, the watcher, the hooks and the board alike. It is the one
// package a caller imports to work with a project: the names a caller needs
// of the storage beneath it are given here (vocabulary.go), and so are the
// storage methods a caller needs (store_places.go); Store embeds nothing.
//
// It stores through the layer beneath it, fsstore/internal/storage (the
// layout, ids, errors, the config, documents, logs, cursors: no rule),
// which only fsstore can import and which in turn uses the file mechanics
// of internal/lockedfile. Files are grouped by what they
// are about: agent_, task_, chat_, conv_, delegation, notice_, marker_,
// session_, watch_ (the watcher's runs and triggers), doctor_, compact.
// The invariants the two layers keep together:
//
//   - an append writes one whole line with one write(2) on an O_APPEND
//     descriptor, under the file's own flock, after checking that the path
//     still names the locked inode, and fsyncs before returning (unless the
//     project chose durability = "none");
//   - a JSON document is replaced by temp file, fsync, rename, directory
//     fsync, under its collection's <dir>/.lock; one a person may edit
//     (UpdateDoc: tasks, config) with a compare-and-swap against a
//     lock-less editor, keeping keys aipm does not know, and one only aipm
//     writes (writeDoc: sessions, conversations, indexes, passkeys) whole;
//   - a batch handed to a session is marked read only when a later call of
//     that session proves its answer was read (Acknowledge; the proofs are
//     mcpserver's, links.go), or taken back (Unhand); a crash makes it come
//     again, marked;
//   - a reader never returns a line without its trailing newline, and reports
//     an unparsable complete line as path:line: reason without changing it;
//   - no request value becomes part of a path without passing the id checks
//     of storage/ids.go;
//   - locks are taken in one order, so none can deadlock: the rank of every
//     lock and what is taken inside each are the table in
//     storage/lockorder.go, which lockedfile checks every acquisition
//     against when built with the tag lockrank (as every test run is).
package fsstore
