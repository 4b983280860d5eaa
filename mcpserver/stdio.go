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
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/internal/failpoint"
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
//
// Served by Server.Run, each tools/call request is a link on the one
// ordered connection the pipe is, kept by links (links.go): it carries its
// id to the gate in linkHeader, as an HTTP request does, and its answer's
// line is written through links.write.
func Stdio(r io.Reader, w io.Writer, log *slog.Logger) mcp.Transport {
	return &stdio{r: r, w: w, log: log}
}

type stdio struct {
	r     io.Reader
	w     io.Writer
	log   *slog.Logger
	links *links // set by Server.Run
}

func (t *stdio) Connect(context.Context) (mcp.Connection, error) {
	c := &stdioConn{w: t.w, log: t.log, links: t.links, pipe: &linkConn{},
		incoming: make(chan jsonrpc.Message), closed: make(chan struct{})}
	go c.readLoop(t.r)
	return c, nil
}

// stdioConn is an mcp.Connection over newline-delimited JSON-RPC. Reads
// happen in readLoop, so that Close can end a Read blocked on input.
type stdioConn struct {
	w   io.Writer
	log *slog.Logger

	links *links    // nil: no links (a transport not run by Server.Run)
	pipe  *linkConn // the pipe: requests in and answers out, in order

	writeMu sync.Mutex // one whole line per Write

	incoming  chan jsonrpc.Message
	readErr   error // set before incoming is closed
	closed    chan struct{}
	closeOnce sync.Once
}

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case msg, ok := <-c.incoming:
		if !ok {
			return nil, c.readErr
		}
		return msg, nil
	}
}

func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	var l *link
	if resp, ok := msg.(*jsonrpc.Response); ok && c.links != nil {
		l = c.links.answering(c.pipe, resp.ID)
	}
	err := ctx.Err()
	var data []byte
	if err == nil {
		data, err = jsonrpc.EncodeMessage(msg)
	}
	if err == nil {
		line := append(data, '\n')
		if l == nil {
			_, err = c.writeLine(line)
		} else {
			if c.links.handsAny(l) {
				failpoint.Hold(failpointHandedUnwritten)
			}
			_, err = c.links.write(l, func() (int, error) { return c.writeLine(line) })
		}
	}
	if l != nil {
		c.links.finish(l)
	}
	return err
}

// failpointHandedUnwritten is where a test stalls aipm serve (the
// failpoint package): the answer that hands a session a batch is ready,
// and not written yet.
const failpointHandedUnwritten = "handed-answer-unwritten"

// arrived makes req, a tools/call request just read, a link (links.arrive),
// and puts its id in req for the gate.
func (c *stdioConn) arrived(req *jsonrpc.Request) {
	l := c.links.arrive(c.pipe, req.ID)
	req.Extra = &mcp.RequestExtra{Header: http.Header{linkHeader: {l.id}}}
}

func (c *stdioConn) writeLine(line []byte) (int, error) {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	return c.w.Write(line)
}

func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		if c.links != nil {
			c.links.hangUp(c.pipe)
		}
	})
	return nil
}

func (c *stdioConn) SessionID() string { return "" }

// readLoop decodes frames from r until it ends (io.EOF: the client is
// gone) and answers the bad ones itself.
func (c *stdioConn) readLoop(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	defer close(c.incoming)
	for {
		line, tooLong, err := readFrame(br, MaxFrame)
		if len(bytes.TrimSpace(line)) > 0 || tooLong {
			msg, reply := checkFrame(line, tooLong)
			if reply != nil {
				c.log.Warn("refused a malformed JSON-RPC frame", "bytes", len(line), "reply", string(reply))
				if _, werr := c.writeLine(reply); werr != nil {
					c.readErr = werr
					return
				}
			} else {
				if req, ok := msg.(*jsonrpc.Request); ok && c.links != nil && req.IsCall() && req.Method == "tools/call" {
					c.arrived(req)
				}
				select {
				case c.incoming <- msg:
				case <-c.closed:
					c.readErr = io.EOF
					return
				}
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				err = fmt.Errorf("read stdin: %w", err)
			}
			c.readErr = err
			return
		}
	}
}

// readFrame reads one line without its newline. A line longer than limit
// is read to its end but not kept: tooLong is true and line holds at most
// its first limit bytes.
func readFrame(br *bufio.Reader, limit int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > limit+1 { // +1: the newline
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

// checkFrame decodes a frame, or returns the error reply for a bad one.
func checkFrame(line []byte, tooLong bool) (jsonrpc.Message, []byte) {
	if tooLong {
		return nil, errorReply(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("frame too large: a message must be at most %d bytes on one line", MaxFrame))
	}
	if !json.Valid(line) {
		return nil, errorReply(nil, jsonrpc.CodeParseError, "parse error: the line is not one JSON value; send one JSON-RPC message per line")
	}
	trimmed := bytes.TrimSpace(line)
	if trimmed[0] != '{' {
		what := "a batch (JSON array); batches are not supported: send one message per line"
		if trimmed[0] != '[' {
			what = "not a JSON object; send one JSON-RPC message object per line"
		}
		return nil, errorReply(nil, jsonrpc.CodeInvalidRequest, "invalid request: the line is "+what)
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return nil, errorReply(idOf(line), jsonrpc.CodeInvalidRequest, "invalid request: not a JSON-RPC 2.0 message ("+clipError(err)+")")
	}
	return msg, nil
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
