package fsstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"aipm/fsstore/internal/storage"
	"aipm/internal/lockedfile"
)

// Marker is a chat command marker (DESIGN section 11, seed 003): a human
// writes it in a message to turn chat into one operation on tasks.
type Marker string

// The markers, by the command word that follows "@@".
const (
	MarkerCreate   Marker = "タスク作成"  // request_task
	MarkerNotify   Marker = "タスク通知"  // notify_task_session
	MarkerAdjust   Marker = "タスク調整"  // update_task_from_chat
	MarkerStart    Marker = "タスク開始"  // start_task_from_chat
	MarkerCheck    Marker = "タスク確認"  // list_tasks, answered with respond_chat (no operation)
	MarkerBlock    Marker = "ブロック報告" // report_block_from_chat
	MarkerComplete Marker = "完了報告"   // report_completion_from_chat
)

// markers lists the markers in the order the instructions explain them.
var markers = []Marker{MarkerCreate, MarkerNotify, MarkerAdjust, MarkerStart, MarkerCheck, MarkerBlock, MarkerComplete}

// markerInfo is the one table of what each marker authorizes and the code
// of the refusal when it is missing. A bare marker needs no colon (seed
// 003 writes @@タスク確認 and @@完了報告 without one): the command word
// ends it, followed by a colon (taken with it), a space, a punctuation
// mark or the end, never by a letter or digit.
var markerInfo = map[Marker]struct {
	tool, code, what string
	bare             bool
}{
	MarkerCreate:   {"request_task", "task_request_marker_required", "create a task", false},
	MarkerNotify:   {"notify_task_session", "task_notify_marker_required", "notify your task session", false},
	MarkerAdjust:   {"update_task_from_chat", "task_adjust_marker_required", "change a task", false},
	MarkerStart:    {"start_task_from_chat", "task_start_marker_required", "start a task", false},
	MarkerCheck:    {"list_tasks", "", "report your tasks", true},
	MarkerBlock:    {"report_block_from_chat", "task_block_marker_required", "block a task", false},
	MarkerComplete: {"report_completion_from_chat", "task_completion_marker_required", "report a task complete", true},
}

// String is the marker as a human types it, with half-width @ and colon
// (a bare marker without the colon it does not need).
func (m Marker) String() string {
	if markerInfo[m].bare {
		return "@@" + string(m)
	}
	return "@@" + string(m) + ":"
}

// Tool is the tool the marker authorizes.
func (m Marker) Tool() string { return markerInfo[m].tool }

// MarkerUse is one marker found in a text: which, and the text after it up
// to the next marker or the end, trimmed.
type MarkerUse struct {
	Marker Marker
	Body   string
}

// ParseMarkers is the one parser of chat command markers: it returns every
// marker in the ordinary text of text, in order. A marker is two at signs,
// each half-width (@) or full-width (＠), the command word, then a colon,
// half-width (:) or full-width (：); a bare marker's colon is optional
// (markerInfo). Anything else (one @, an unknown word, no colon) is
// ordinary text; a marker in a fenced code block, inline code
// or a `>` quote does not count (ordinaryText).
func ParseMarkers(text string) []MarkerUse {
	var out []MarkerUse
	ordinary := ordinaryText(text)
	bodyStart := -1
	for i := 0; i < len(text); {
		m, n := markerAt(ordinary[i:])
		if n == 0 {
			_, size := utf8.DecodeRuneInString(text[i:])
			i += size
			continue
		}
		if bodyStart >= 0 {
			out[len(out)-1].Body = strings.TrimSpace(text[bodyStart:i])
		}
		out = append(out, MarkerUse{Marker: m})
		i += n
		bodyStart = i
	}
	if bodyStart >= 0 {
		out[len(out)-1].Body = strings.TrimSpace(text[bodyStart:])
	}
	return out
}

// findMarker returns the first use of m in text.
func findMarker(text string, m Marker) (MarkerUse, bool) {
	for _, u := range ParseMarkers(text) {
		if u.Marker == m {
			return u, true
		}
	}
	return MarkerUse{}, false
}

// markerAt reports the marker that starts s and its length in bytes (0 if none).
func markerAt(s string) (Marker, int) {
	n := 0
	for range 2 {
		switch {
		case strings.HasPrefix(s[n:], "@"):
			n++
		case strings.HasPrefix(s[n:], "＠"):
			n += len("＠")
		default:
			return "", 0
		}
	}
	for _, m := range markers {
		rest, ok := strings.CutPrefix(s[n:], string(m))
		if !ok {
			continue
		}
		switch {
		case strings.HasPrefix(rest, ":"):
			return m, len(s) - len(rest) + 1
		case strings.HasPrefix(rest, "："):
			return m, len(s) - len(rest) + len("：")
		case markerInfo[m].bare && wordEnds(rest):
			return m, len(s) - len(rest)
		}
	}
	return "", 0
}

// wordEnds reports whether a bare marker's command word ends where rest
// begins: at the end of the text or before anything but a letter or digit
// (@@完了報告書 is a word, not the marker). Hiragana may follow: Japanese puts
// no space after a word (@@完了報告します, @@タスク確認をお願いします).
func wordEnds(rest string) bool {
	r, size := utf8.DecodeRuneInString(rest)
	return size == 0 || unicode.Is(unicode.Hiragana, r) || !(unicode.IsLetter(r) || unicode.IsNumber(r))
}

// markerLog is agents/<agent>/markers.json: the markers of messages that
// have already authorized an operation, keyed by message id and marker, so
// that one marker authorizes one operation.
type markerLog struct {
	Used map[string]markerUsed `json:"used"`
}

// markerKey is the key of one marker of one message in markerLog.Used: a
// message with two different markers authorizes one operation for each.
func markerKey(msgID string, m Marker) string { return msgID + " " + m.String() }

// used is the record of marker m of message msgID, if it was used; a
// record written before markers were counted one by one is keyed by the
// message alone and names its marker.
func (l *markerLog) used(msgID string, m Marker) (markerUsed, bool) {
	if u, ok := l.Used[markerKey(msgID, m)]; ok {
		return u, true
	}
	u, ok := l.Used[msgID]
	return u, ok && u.Marker == m.String()
}

// markerUsed records what a marker of a message was used for.
type markerUsed struct {
	Marker string    `json:"marker"`
	Tool   string    `json:"tool"`
	Result string    `json:"result,omitempty"` // the id of what it made or changed
	At     time.Time `json:"at"`
}

// WithMarker runs op only if the latest message ses's agent received from
// someone else (not the system) carries marker m and that marker has not
// authorized an operation before (DESIGN section 11); what the caller passes
// as arguments does not count. Received means handed to the agent: up to
// its read cursor or the end of the batch ses holds (get_pending_messages),
// never a message still waiting to be fetched. The check, op and the
// record of the use happen under one lock, agents/<agent>/.lock (which
// read.json and auth.json updates share; op takes its locks inside it:
// storage/lockorder.go), so two calls cannot both use one message;
// markers.json's own lock is held only to write the record, not across
// op. op gets the marked message and the marker's body, and returns the
// id of what it made or changed. A refusal changes nothing.
func (s *Store) WithMarker(ctx context.Context, ses Session, m Marker, op func(msg Message, body string) (string, error)) error {
	agent := ses.Agent
	info, ok := markerInfo[m]
	if !ok || info.code == "" {
		return fmt.Errorf("marker %q authorizes no operation", string(m))
	}
	dir, err := s.files.AgentDir(agent)
	if err != nil {
		return err
	}
	if err := s.files.EnsureAgentDir(agent); err != nil {
		return err
	}
	unlock, err := s.files.LockDir(ctx, dir)
	if err != nil {
		return err
	}
	defer unlock()
	path := filepath.Join(dir, "markers.json")
	var log markerLog
	if err := s.files.ReadDoc(path, &log); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	msg, err := s.lastReceived(agent, ses.ID)
	if err != nil {
		return err
	}
	if msg == nil {
		return storage.CodeErr(info.code, "%s needs the marker %s in the latest message someone sent you, and you have received none (call get_pending_messages first if one is waiting): ask the human to send %s followed by what they want, then call %s again", info.tool, m, m, info.tool)
	}
	use, ok := findMarker(msg.Content, m)
	if !ok {
		return storage.CodeErr(info.code, "%s needs the marker %s in the ordinary text of the latest message someone sent you (%s from %s has none; a marker in code, in a quote or in your arguments does not count, and a message you have not fetched with get_pending_messages is not received yet): ask %s to send %s followed by what they want if they want you to %s", info.tool, m, msg.ID, msg.SenderID, msg.SenderID, m, info.what)
	}
	key := markerKey(msg.ID, m)
	if u, used := log.used(msg.ID, m); used {
		return storage.CodeErr(storage.CodeMarkerAlreadyUsed, "the marker %s in message %s from %s already authorized %s (%s): one marker authorizes one operation; ask %s to send a new %s message for another", m, msg.ID, msg.SenderID, u.Tool, u.Result, msg.SenderID, m)
	}
	result, err := op(*msg, use.Body)
	if err != nil {
		return err
	}
	_, err = storage.UpdateDocHeld(ctx, s.files, path, storage.ModeFile, func(log *markerLog, _ bool) error {
		if log.Used == nil {
			log.Used = map[string]markerUsed{}
		}
		log.Used[key] = markerUsed{Marker: m.String(), Tool: info.tool, Result: result, At: time.Now().UTC()}
		return nil
	})
	return err
}

// lastReceived returns the latest message in agent's chat log that someone
// other than agent and the system sent to it and session has received (up
// to the end of the batch session holds, or the read cursor), or nil. It
// reads backwards from there, a window at a time.
func (s *Store) lastReceived(agent, session string) (*Message, error) {
	path, err := s.files.ChatPath(agent)
	if err != nil {
		return nil, err
	}
	end, err := s.receivedEnd(agent, session, path)
	if err != nil || end == 0 {
		return nil, err
	}
	for n := 16; ; n *= 4 {
		msgs, err := s.tail(path, end, n)
		if err != nil {
			return nil, err
		}
		for i := len(msgs) - 1; i >= 0; i-- {
			if m := msgs[i]; m.SenderID != agent && m.ReceiverID == "" && m.Kind != KindSystem && m.SenderID != storage.SystemSender {
				return &m, nil
			}
		}
		if len(msgs) < n {
			return nil, nil // the whole log (or the context window) was read
		}
	}
}

// receivedEnd is the offset in agent's chat log at path up to which session
// has received messages: the end of the batch it holds, or else the read
// cursor (a cursor of a replaced file counts for nothing).
func (s *Store) receivedEnd(agent, session, path string) (int64, error) {
	cursorPath, err := s.files.ReadCursorPath(agent)
	if err != nil {
		return 0, err
	}
	cursors, err := s.files.ReadCursors(cursorPath)
	if err != nil {
		return 0, err
	}
	cur := storage.StartFor(storage.CursorOf(cursors, storage.StreamChat), session)
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, s.files.Failed("read", path, err)
	}
	if cur.Inode != 0 && cur.Inode != lockedfile.Inode(fi) {
		return 0, nil // the log was replaced: nothing in it was handed out yet
	}
	return min(cur.Offset, fi.Size()), nil
}
