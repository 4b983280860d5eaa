package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxFrame is the largest JSON-RPC frame (one line) aipm serve reads: the
// size at which the clients themselves give up on a frame.
const MaxFrame = 16 << 20

// Stdio is the transport of aipm serve: newline-delimited JSON-RPC over r
// and w, like the SDK's own, except that a bad frame cannot end the
// session. The SDK's reader stops at the first frame it cannot decode (a
// garbage line, a bare number, a batch, a line over its limit), which
// would cut off an agent for one stray write. Here each line is checked
// first: a bad one is answered with a JSON-RPC error (-32700 parse error,
// -32600 invalid request; with the request's id where one can be read) and
// skipped, and only well-formed messages reach the SDK. The session ends
// when r ends.
func Stdio(r io.Reader, w io.Writer, log *slog.Logger) mcp.Transport {
	return &stdio{r: r, w: &lockedWriter{w: w}, log: log}
}

type stdio struct {
	r   io.Reader
	w   *lockedWriter
	log *slog.Logger
}

func (t *stdio) Connect(ctx context.Context) (mcp.Connection, error) {
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(t.filter(pw))
	}()
	// The frames that reach the SDK are checked and bounded already.
	inner := &mcp.IOTransport{Reader: pr, Writer: t.w, MaxLineLength: -1}
	return inner.Connect(ctx)
}

// lockedWriter serialises whole writes: the SDK writes each message with
// one Write, and so does filter's error reply.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return nil }

// filter copies well-formed frames from t.r to pw and answers the others.
// It returns when t.r ends (nil at EOF, so the SDK sees a clean EOF) or pw
// is closed.
func (t *stdio) filter(pw io.Writer) error {
	br := bufio.NewReaderSize(t.r, 64<<10)
	for {
		line, tooLong, err := readFrame(br, MaxFrame)
		if len(bytes.TrimSpace(line)) > 0 || tooLong {
			if reply := checkFrame(line, tooLong); reply != nil {
				t.log.Warn("refused a malformed JSON-RPC frame", "bytes", len(line), "reply", string(reply))
				if _, werr := t.w.Write(reply); werr != nil {
					return werr
				}
			} else if _, werr := pw.Write(append(line, '\n')); werr != nil {
				return werr
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// readFrame reads one line without its newline. A line longer than max is
// read to its end but not kept: tooLong is true and line holds at most its
// first max bytes.
func readFrame(br *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > max+1 { // +1: the newline
				tooLong = true // keep what came before; drop the rest
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(line, "\r\n"), tooLong, err
	}
}

// checkFrame returns the error reply for a bad frame, or nil for a
// well-formed JSON-RPC message.
func checkFrame(line []byte, tooLong bool) []byte {
	if tooLong {
		return errorReply(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("frame too large: a message must be at most %d bytes on one line", MaxFrame))
	}
	if !json.Valid(line) {
		return errorReply(nil, jsonrpc.CodeParseError, "parse error: the line is not one JSON value; send one JSON-RPC message per line")
	}
	trimmed := bytes.TrimSpace(line)
	if trimmed[0] != '{' {
		what := "a batch (JSON array); batches are not supported: send one message per line"
		if trimmed[0] != '[' {
			what = "not a JSON object; send one JSON-RPC message object per line"
		}
		return errorReply(nil, jsonrpc.CodeInvalidRequest, "invalid request: the line is "+what)
	}
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		return errorReply(idOf(line), jsonrpc.CodeInvalidRequest, "invalid request: not a JSON-RPC 2.0 message ("+clipError(err)+")")
	}
	return nil
}

// idOf is the frame's id if it is one JSON-RPC allows (a string or a
// number), so that the reply can be matched to the request; else null.
func idOf(line []byte) json.RawMessage {
	var msg struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &msg) != nil || len(msg.ID) == 0 || len(msg.ID) > 128 {
		return nil
	}
	switch msg.ID[0] {
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return msg.ID
	}
	return nil
}

func clipError(err error) string {
	s := err.Error()
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// errorReply is a JSON-RPC error response line; a nil id is null, as the
// specification asks when the request's id cannot be known.
func errorReply(id json.RawMessage, code int64, msg string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	reply, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: msg}})
	return append(reply, '\n')
}
