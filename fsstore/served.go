package fsstore

import (
	"aipm/fsstore/internal/storage"
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// What aipm serves of stored text is bounded (DESIGN section 14): a field
// written by hand past its limit is cut, with a marker that says how long it
// was, where the whole text is and the limit. This file is the one place
// the cut is made; the readers that hand records to tools and commands call
// the served methods below, and what is stored is never changed.

// servedLimits adds the limits of fields that are never written through
// CheckText (aipm writes them itself) to TextLimits.
var servedLimits = map[string]int{
	"message":       storage.MaxContext, // a notification
	"blockedReason": storage.MaxReason,
	"endReason":     storage.MaxReason,
	"taskResult":    storage.MaxPurpose, // a task's report result (an enum aipm writes)
}

// servedLimit is the limit, in characters, of field as served.
func servedLimit(field string) int {
	if n, ok := storage.TextLimits[field]; ok {
		return n
	}
	if n, ok := servedLimits[field]; ok {
		return n
	}
	panic("fsstore: no served limit for field " + field)
}

// cutServed returns value if it has at most field's limit in characters,
// else its first that many characters and a marker naming where the whole
// text is (where: a path relative to the project, with :line for a log).
func cutServed(field, value, where string) string {
	limit := servedLimit(field)
	if len(value) <= limit { // a character is at least one byte
		return value
	}
	cut, n := 0, 0
	for cut < len(value) && n < limit {
		_, size := utf8.DecodeRuneInString(value[cut:])
		cut += size
		n++
	}
	if cut == len(value) {
		return value
	}
	return fmt.Sprintf("%s… [cut: %s bytes in %s; limit %s]", value[:cut], thousands(len(value)), where, thousands(limit))
}

// thousands writes n with comma separators: 17,825,792.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// served is t as served: every free-text field bounded.
func (t Task) served(where string) Task {
	t.Title = cutServed("title", t.Title, where)
	t.Description = cutServed("description", t.Description, where)
	t.Summary = cutServed("summary", t.Summary, where)
	t.BlockedReason = cutServed("blockedReason", t.BlockedReason, where)
	t.Result = cutServed("taskResult", t.Result, where)
	return t
}

// served is m as served.
func (m Message) served(where string) Message {
	m.Content = cutServed("content", m.Content, where)
	return m
}

// served is n as served.
func (n Notification) served(where string) Notification {
	n.Message = cutServed("message", n.Message, where)
	return n
}

// served is c as served.
func (c Conversation) served(where string) Conversation {
	c.Purpose = cutServed("purpose", c.Purpose, where)
	c.EndReason = cutServed("endReason", c.EndReason, where)
	return c
}

// served is d as served.
func (d Delegation) served(where string) Delegation {
	d.Purpose = cutServed("purpose", d.Purpose, where)
	d.Context = cutServed("context", d.Context, where)
	d.Result = cutServed("result", d.Result, where)
	return d
}

// lineOf names line n of the file at rel.
func lineOf(rel string, n int) string { return rel + ":" + strconv.Itoa(n) }

// servedKeys maps the JSON keys of the text fields the served methods above
// bound to their limit's field, by kind of file: doctor reports each one
// over its limit (longFields).
var servedKeys = map[string][][2]string{
	storage.Tasks:         {{"title", "title"}, {"description", "description"}, {"summary", "summary"}, {"blockedReason", "blockedReason"}, {"result", "taskResult"}},
	storage.Conversations: {{"purpose", "purpose"}, {"endReason", "endReason"}},
	storage.Delegations:   {{"purpose", "purpose"}, {"context", "context"}, {"result", "result"}},
	"chat.jsonl":          {{"content", "content"}},
	"notifications.jsonl": {{"message", "message"}},
}

// longFields says, for one record of the given kind, which served fields
// are over their limit: (JSON key, reason).
func longFields(kind string, data []byte) [][2]string {
	var out [][2]string
	for _, kf := range servedKeys[kind] {
		v := gjson.GetBytes(data, kf[0])
		if v.Type != gjson.String {
			continue
		}
		limit := servedLimit(kf[1])
		if len(v.Str) > limit && utf8.RuneCountInString(v.Str) > limit {
			out = append(out, [2]string{kf[0], fmt.Sprintf("field %s is %s bytes (limit %s characters): aipm serves it cut to the limit; shorten it by hand", kf[0], thousands(len(v.Str)), thousands(limit))})
		}
	}
	return out
}

// longFieldProblems is doctor's check of the served fields of one file:
// a JSONL log line by line, or a document of a collection.
func (s *Store) longFieldProblems(path string, data []byte) []storage.Problem {
	kind := filepath.Base(path)
	if !strings.HasSuffix(kind, ".jsonl") {
		kind = filepath.Base(filepath.Dir(path))
		if filepath.Dir(path) != s.files.CollectionDir(kind) {
			return nil
		}
	}
	if servedKeys[kind] == nil {
		return nil
	}
	rel := s.files.Rel(path)
	var out []storage.Problem
	if !strings.HasSuffix(kind, ".jsonl") {
		for _, kr := range longFields(kind, data) {
			out = append(out, storage.Problem{Path: rel, Line: jsonKeyLine(data, kr[0]), Reason: kr[1]})
		}
		return out
	}
	for i, line := range bytes.Split(data, []byte("\n")) {
		for _, kr := range longFields(kind, line) {
			out = append(out, storage.Problem{Path: rel, Line: i + 1, Reason: kr[1]})
		}
	}
	return out
}
