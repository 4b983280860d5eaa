package fsstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"aipm/fsstore/internal/storage"
	"aipm/internal/lockedfile"
)

// schemaOf returns the meaning check of a document by where it lives, or
// nil for documents doctor checks for syntax only. A check returns the
// problems as (JSON key, reason); doctor turns the key into a line.
func (s *Store) schemaOf(path string) func(data []byte) [][2]string {
	dir, name := filepath.Dir(path), filepath.Base(path)
	switch {
	case dir == s.files.CollectionDir(storage.Tasks) && strings.HasSuffix(name, ".json"):
		return func(data []byte) [][2]string { return checkTaskDoc(strings.TrimSuffix(name, ".json"), data) }
	case dir == s.files.CollectionDir(storage.Sessions) && strings.HasSuffix(name, ".json"):
		return func(data []byte) [][2]string { return checkSessionDoc(strings.TrimSuffix(name, ".json"), data) }
	case filepath.Dir(dir) == s.files.AgentsDir() && name == "read.json":
		return checkCursorsDoc
	}
	return nil
}

// typeProblem explains a field of the wrong JSON type.
func typeProblem(err error) [][2]string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		// "@offset" locates the value itself (jsonKeyLine).
		return [][2]string{{fmt.Sprintf("@%d", te.Offset), lockedfile.JSONWords(nil, err)}}
	}
	return [][2]string{{"", lockedfile.JSONWords(nil, err)}}
}

func checkTaskDoc(id string, data []byte) [][2]string {
	var t Task
	if err := json.Unmarshal(data, &t); err != nil {
		return typeProblem(err)
	}
	var out [][2]string
	bad := func(key, format string, args ...any) { out = append(out, [2]string{key, fmt.Sprintf(format, args...)}) }
	if t.ID != id {
		bad("id", "id %q does not match the file name %s.json", t.ID, id)
	}
	if strings.TrimSpace(t.Title) == "" {
		bad("title", "title is required")
	}
	if err := CheckStatus(t.Status); err != nil {
		bad("status", "%v", err)
	}
	if !slices.Contains(Priorities, t.Priority) {
		bad("priority", "priority %q is invalid: use one of %s", t.Priority, strings.Join(Priorities, ", "))
	}
	if !slices.Contains([]string{ApprovalApproved, ApprovalPending, ApprovalRejected}, t.ApprovalStatus) {
		bad("approvalStatus", "approvalStatus %q is invalid: use %s, %s or %s", t.ApprovalStatus, ApprovalApproved, ApprovalPending, ApprovalRejected)
	}
	for key, ref := range map[string]string{"assignee": t.Assignee, "requester": t.Requester} {
		if ref != "" && ref != storage.SystemSender && storage.CheckAgentID(ref) != nil {
			bad(key, "%s %q is not an agent id", key, ref)
		}
	}
	if t.ParentID != "" && storage.CheckID(storage.PrefixTask, t.ParentID) != nil {
		bad("parentId", "parentId %q is not a task id", t.ParentID)
	}
	if t.CreatedAt.IsZero() {
		bad("createdAt", "createdAt is required (RFC 3339)")
	}
	return out
}

func checkSessionDoc(id string, data []byte) [][2]string {
	var ses Session
	if err := json.Unmarshal(data, &ses); err != nil {
		return typeProblem(err)
	}
	var out [][2]string
	bad := func(key, format string, args ...any) { out = append(out, [2]string{key, fmt.Sprintf(format, args...)}) }
	if ses.ID != id {
		bad("id", "id %q does not match the file name %s.json", ses.ID, id)
	}
	if err := storage.CheckAgentID(ses.Agent); err != nil {
		bad("agentId", "%v", err)
	}
	if err := storage.CheckPurpose(ses.Purpose); err != nil {
		bad("purpose", "%v", err)
	}
	if ses.TokenHash == "" {
		bad("tokenHash", "tokenHash is required")
	}
	return out
}

func checkCursorsDoc(data []byte) [][2]string {
	var cursors storage.Cursors
	if err := json.Unmarshal(data, &cursors); err != nil {
		return typeProblem(err)
	}
	var out [][2]string
	for stream, sc := range cursors {
		known := stream == storage.StreamChat || stream == storage.StreamNotifications || stream == storage.NotificationStream(storage.PurposeTask) || stream == storage.NotificationStream(storage.PurposeChat)
		task := storage.TaskOfStream(stream)
		switch {
		case task != "" && storage.CheckID(storage.PrefixTask, task) != nil:
			out = append(out, [2]string{stream, fmt.Sprintf("cursor %q: %q is not a task id (a task's notifications cursor is %s followed by one)", stream, task, storage.TaskNotificationStream(""))})
		case !known && task == "":
			out = append(out, [2]string{stream, fmt.Sprintf("unknown cursor %q: aipm keeps %s, %s, %s and %s", stream, storage.StreamChat, storage.NotificationStream(storage.PurposeTask), storage.TaskNotificationStream("<task id>"), storage.NotificationStream(storage.PurposeChat))})
		case sc.Offset < 0 || sc.Line < 0 || (sc.Offset > 0) != (sc.Line > 0):
			out = append(out, [2]string{stream, fmt.Sprintf("cursor %q has offset %d and line %d: both are 0 or both positive", stream, sc.Offset, sc.Line)})
		case sc.Pending != nil && storage.CheckID(storage.PrefixSession, sc.Pending.Session) != nil:
			out = append(out, [2]string{stream, fmt.Sprintf("cursor %q: pending session %q is not a session id", stream, sc.Pending.Session)})
		}
	}
	return out
}

// jsonKeyLine is the 1-based line of data where "key" first appears as a
// key (or, for "@offset", the line of that byte offset), or 1.
func jsonKeyLine(data []byte, key string) int {
	if key == "" {
		return 1
	}
	var off int
	if _, err := fmt.Sscanf(key, "@%d", &off); err == nil {
		return 1 + bytes.Count(data[:min(off, len(data))], []byte("\n"))
	}
	quoted, _ := json.Marshal(key)
	if i := bytes.Index(data, append(quoted, ':')); i >= 0 {
		return 1 + bytes.Count(data[:i], []byte("\n"))
	}
	if i := bytes.Index(data, quoted); i >= 0 {
		return 1 + bytes.Count(data[:i], []byte("\n"))
	}
	return 1
}

// invalidNotificationLine says why a notifications line is not a
// notification, or "".
func invalidNotificationLine(b []byte) string {
	if reason := lockedfile.InvalidLine(b); reason != "" {
		return reason
	}
	if err := checkNotification(storage.Record{Data: b}); err != nil {
		return err.Error()
	}
	var n Notification
	json.Unmarshal(b, &n)
	if storage.CheckID(storage.PrefixNotification, n.ID) != nil {
		return fmt.Sprintf("not a notification: id %q is not a notification id", n.ID)
	}
	return ""
}
