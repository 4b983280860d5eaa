package clientkit

import (
	"bytes"
	"sync"
)

// Lines is the writer of a client's stdout that hands each line (without
// its newline) to line as it is complete, all under one lock: the base of
// an Output that reads the client's JSON lines.
type Lines struct {
	mu      sync.Mutex
	partial []byte
	line    func([]byte)
}

// NewLines is a Lines handing each line to line.
func NewLines(line func([]byte)) *Lines { return &Lines{line: line} }

func (l *Lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.line(l.partial[:i])
		l.partial = l.partial[i+1:]
	}
	return len(p), nil
}

// Done hands on the last line, one the client did not end, and then runs
// read, under the lock the lines were handed on with (Output.Refusals,
// once the client has exited).
func (l *Lines) Done(read func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.partial) > 0 {
		l.line(l.partial)
		l.partial = nil
	}
	read()
}
