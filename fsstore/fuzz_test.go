package fsstore

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"aipm/fsstore/internal/storage"
	"aipm/internal/lockedfile"
)

// The fuzz targets of the attack suite (docs/operations.md): every parser
// of what a human or a client wrote. Their seed corpora, under
// testdata/fuzz/, run as ordinary tests; `go test -fuzz` explores further.
// Properties: no panic, and where cheap, what is accepted survives a
// round trip.

func FuzzDecodeMessage(f *testing.F) {
	f.Add([]byte(`{"id":"msg_1","senderId":"alice","content":"hi","createdAt":"2026-01-02T03:04:05.000000Z"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := decodeMessage(line)
		if err != nil {
			return
		}
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("accepted %q, cannot encode it: %v", line, err)
		}
		m2, err := decodeMessage(again)
		if err != nil || m2.ID != m.ID || m2.SenderID != m.SenderID {
			t.Fatalf("accepted %q, refused its re-encoding %s: %v", line, again, err)
		}
	})
}

func FuzzDecodeNotification(f *testing.F) {
	f.Add([]byte(`{"type":"interrupt","taskId":"tsk_1","message":"stop","createdAt":"2026-01-02T03:04:05Z"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		n, err := decodeNotification(storage.Record{Line: 1, Data: line})
		if err != nil {
			return
		}
		again, err := json.Marshal(n)
		if err != nil {
			t.Fatalf("accepted %q, cannot encode it: %v", line, err)
		}
		if _, err := decodeNotification(storage.Record{Line: 1, Data: again}); err != nil {
			t.Fatalf("accepted %q, refused its re-encoding %s: %v", line, again, err)
		}
	})
}

// FuzzTaskDoc: a task document as a human may save it, through the
// decoder, doctor's schema check and every status transition.
func FuzzTaskDoc(f *testing.F) {
	f.Add([]byte(`{"id":"tsk_1","title":"t","status":"todo","approvalStatus":"approved","assignee":"coder"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkTaskDoc("tsk_1", data)
		var task Task
		if storage.DecodeDoc("tasks/tsk_1.json", data, &task) != nil {
			return
		}
		for _, to := range append(Statuses, "", "nonsense") {
			checkTransition(task, to)
		}
		out, err := lockedfile.EncodeKeeping(&task, data)
		if err != nil {
			return // the encoder refuses what it cannot keep
		}
		var again Task
		if err := storage.DecodeDoc("tasks/tsk_1.json", out, &again); err != nil || again.ID != task.ID || again.Status != task.Status {
			t.Fatalf("decoded %q, rewrote it as %q, which reads back as %+v, %v", data, out, again, err)
		}
	})
}

func FuzzSessionDoc(f *testing.F) {
	f.Add([]byte(`{"id":"ses_1","agent":"coder","purpose":"chat","createdAt":"2026-01-02T03:04:05Z"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkSessionDoc("ses_1", data)
		var ses Session
		if storage.DecodeDoc("sessions/ses_1.json", data, &ses) != nil {
			return
		}
		if _, err := lockedfile.EncodeKeeping(&ses, data); err != nil {
			return
		}
	})
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte("[project]\nname = \"p\"\n\n[[agents]]\nid = \"coder\"\ntype = \"ai\"\n"))
	f.Add([]byte("[defaults]\nwait_seconds = \"x\"\nchat_idle_timeout = 30\n[[agents]]\nid = 1\nenv = { A = [1] }\n"))
	f.Add([]byte("[notifications]\nttl = 3\n[groups]\nteam = { a = 1 }\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := storage.ParseConfig("config.toml", data)
		if err == nil && cfg == nil {
			t.Fatalf("ParseConfig(%q): no config and no error", data)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "config.toml") {
			t.Fatalf("ParseConfig(%q): error %q does not name the file", data, err)
		}
		// A value of the wrong type is said in aipm's words, never the
		// decoder's, and never as the fallback for a case shape missed.
		if err != nil && (strings.Contains(err.Error(), "last key") || strings.Contains(err.Error(), "destination") || strings.Contains(err.Error(), "aipm cannot read this value")) {
			t.Fatalf("ParseConfig(%q): error %q is not in aipm's words", data, err)
		}
	})
}

// FuzzPasskeyFile: a passkey file (AIPM_PASSKEY_FILE) and a stored
// passkey.json, both as someone may have left them. A passkey is accepted
// only if it hashes to what the record holds.
func FuzzPasskeyFile(f *testing.F) {
	f.Add([]byte(`{"algorithm":"sha256","salt":"00ff","hash":"ab","createdAt":"2026-01-02T03:04:05Z"}`), "aipm_pk_x\n")
	s, err := Init(f.TempDir(), "fuzz")
	if err != nil {
		f.Fatal(err)
	}
	record, _ := s.files.PasskeyPath("coder")
	keyFile := filepath.Join(f.TempDir(), "passkey")
	if err := s.files.MkdirAll(filepath.Dir(record)); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, doc []byte, file string) {
		if err := os.WriteFile(keyFile, []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
		passkey, err := ReadPasskeyFile(keyFile)
		if err != nil || passkey != strings.TrimSpace(file) {
			t.Fatalf("ReadPasskeyFile(%q) = %q, %v", file, passkey, err)
		}
		if err := os.WriteFile(record, doc, 0o600); err != nil {
			t.Fatal(err)
		}
		if s.checkPasskey("coder", passkey) != nil {
			return
		}
		var rec passkeyRecord
		json.Unmarshal(doc, &rec)
		salt, _ := hex.DecodeString(rec.Salt)
		if !utf8.ValidString(passkey) || hashPasskey(salt, passkey) != rec.Hash {
			t.Fatalf("passkey %q accepted against %q", passkey, doc)
		}
	})
}
