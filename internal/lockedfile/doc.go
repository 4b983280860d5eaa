// Package lockedfile holds the file primitives that aipm's store is built
// on, and knows nothing of messages, tasks or sessions (cmd/go keeps its
// internal/lockedfile apart from its users the same way):
//
//   - Appender.Write: one whole line, one write(2) on an O_APPEND descriptor, under
//     the file's own flock, after checking that the path still names the
//     locked inode; a failed or short write is truncated back under the lock,
//     so a full disk leaves no fragment;
//   - LineReader and ReadAll: complete lines only, an invalid complete line
//     reported as path:line: reason, a last line without its newline never
//     returned;
//   - Cursor and ReadPast: a reader's place in a JSONL file, decided on one
//     open descriptor, trusted only when the record that ends at its offset
//     is the record it remembers, found again by its remembered ids
//     otherwise, and delivering again (marked) rather than skipping when none
//     is left;
//   - WriteAtomic, ReadDoc (Identity) and Update: documents replaced by temp
//     file, fsync, rename and directory fsync, with the identity of what was
//     read for a compare-and-swap; Lock, TryLock and Held: flocks;
//   - ReadLocked and RewriteKeeping: a whole JSONL file read, and rewritten
//     without some lines, under its lock (doctor's repair);
//   - Scan: the low-level check of a whole file that doctor reports from.
//   - RankLocks: a store's ranking of its lock paths, against which every
//     lock taken here is checked when built with the tag lockrank
//     (lockrank.go).
package lockedfile
