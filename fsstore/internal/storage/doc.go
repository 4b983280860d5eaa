// Package storage is the layer of fsstore beneath the rules: how a
// project's .ai-pm/ directory is stored, knowing nothing of what a message,
// a task or a session means.
//
// It holds the handle Files (the layout, the durability in force, the
// append descriptors this process keeps), every path (layout.go), the
// identifiers and their checks (ids.go), the errors and their codes
// (errors.go), the limits of stored fields (limits.go), the config's
// loading and checking (config*.go; fsstore's Store.EditConfig saves it),
// JSON documents (docs.go: ReadDoc, WriteDoc, UpdateDoc) and JSONL logs
// (jsonl.go), read cursors and handed batches (cursor.go), receipts, the
// local-filesystem check (localfs.go), a clone's checkout marker
// (checkout.go), the back-off of wrong passkeys (backoff.go) and the
// watcher's lock (watcher.go). The file mechanics themselves are
// internal/lockedfile's.
//
// It imports lockedfile and nothing of the rules: the rules (package
// fsstore) call it, never the other way; TestImportsNoRules holds that. A
// rule that must run where a document is read is a method of the document
// (Settle, which DecodeDoc calls), not an import.
package storage
