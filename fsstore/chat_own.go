package fsstore

import "aipm/internal/lockedfile"

// sentOwn keeps what this process knows of the sender's chat log valid
// across the sender's own copy of a message it just wrote (ch: the log's
// stamps just before and after that line, under its lock): a sent copy is
// no message from others, so a chat session found with no new message
// (NewMessagesFor) still has none, and the notification line of the send
// costs two stats instead of a read of the log.
func (s *Store) sentOwn(ch lockedfile.Change) {
	s.caches.quietChat.Moved(ch.Before, ch.After)
}
