package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzCheckFrame: whatever a line holds, checkFrame either decodes it, or
// answers it with one JSON-RPC error line.
// go test -fuzz FuzzCheckFrame ./mcpserver runs it for as long as you like.
func FuzzCheckFrame(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `garbage`, `42`, `[]`, `[{"jsonrpc":"2.0","id":5,"method":"ping"}]`,
		`{"jsonrpc":"1.0","id":6,"method":"ping"}`, `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, `{}`, "{\"a\":\"\xff\"}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		msg, reply := checkFrame(line, false)
		if reply == nil {
			if msg == nil {
				t.Fatal("neither a message nor a reply")
			}
			return
		}
		var m struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   *jsonrpc.Error  `json:"error"`
		}
		if bytes.Count(reply, []byte("\n")) != 1 || json.Unmarshal(reply, &m) != nil || m.JSONRPC != "2.0" || m.Error == nil || len(m.ID) == 0 {
			t.Fatalf("reply is not one JSON-RPC error line: %q", reply)
		}
	})
}

// FuzzLoneSurrogate: hasLoneSurrogate agrees with the JSON decoder, which
// turns a lone surrogate escape into U+FFFD.
func FuzzLoneSurrogate(f *testing.F) {
	for _, seed := range []string{`"\ud800"`, `"\ud83d\ude00"`, `"\\ud800"`, `"\udc00"`, `"a\u00e9"`, `"\ud800\u0041"`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var v string
		if json.Unmarshal([]byte(s), &v) != nil || strings.ContainsRune(s, '\uFFFD') || strings.Contains(strings.ToLower(s), `\ufffd`) {
			return
		}
		if got, want := hasLoneSurrogate([]byte(s)), strings.ContainsRune(v, '\uFFFD'); got != want {
			t.Fatalf("hasLoneSurrogate(%s) = %v; the decoder made %q", s, got, v)
		}
	})
}

// A line over the limit is read to its end and not kept; the next line is
// read whole.
func TestReadFrame(t *testing.T) {
	br := bufio.NewReaderSize(strings.NewReader(strings.Repeat("x", 100)+"\nnext\nlast"), 16)
	line, tooLong, err := readFrame(br, 50)
	if !tooLong || err != nil || len(line) > 50 {
		t.Fatalf("long line: %d bytes, tooLong %v, err %v", len(line), tooLong, err)
	}
	for _, want := range []string{"next", "last"} {
		line, tooLong, _ = readFrame(br, 50)
		if string(line) != want || tooLong {
			t.Fatalf("got %q (tooLong %v), want %q", line, tooLong, want)
		}
	}
}
