// Package fsstore holds the rules of a project's .ai-pm/ directory: what a
// message, a task, a session, a conversation, a delegation, a notification
// and a chat marker are and may do, each rule in one place, called by the MCP
// tools, the CLI, the watcher, the hooks and the board alike.
//
// It stores through the layer beneath it, fsstore/storage (the layout, ids,
// errors, the config, documents, logs, cursors: no rule), which in turn uses
// the file mechanics of fsstore/lockedfile. Files are grouped by what they
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
//   - locks are taken in one order, so none can deadlock: the locks of a
//     dual write are taken one after the other, a collection's .lock is
//     released before any append, and an end hook (sessionEnded) runs
//     after the sessions lock is released. Two locks are held across
//     others: an agent's agents/<agent>/.lock around a marked operation
//     (WithMarker: the task lock, then appends, inside it; it is always the
//     outermost), and the watcher's watcher.lock, held for its life, which
//     nothing waits for (a second watcher tries it and gives up). Open
//     takes local.lock only to settle a checkout without its marker (a
//     clone: checkout.go), outermost, before any other lock.
package fsstore
