package lockedfile

import (
	"bytes"
	"fmt"
)

// BadLine is one line Scan found wrong: where it is, why, and its bytes.
type BadLine struct {
	Line    int
	Offset  int64
	Reason  string
	Content []byte
}

// Scan checks every line of a whole file's data with invalid (which gets the
// line trimmed of spaces and says why it is wrong, or ""), and returns the
// bad lines, the torn tail among them, and the byte ranges of every other
// line, newline included, in order.
func Scan(data []byte, invalid func([]byte) string) (bad []BadLine, keep [][2]int) {
	off, line := 0, 0
	for off < len(data) {
		line++
		end := bytes.IndexByte(data[off:], '\n')
		if end < 0 {
			bad = append(bad, BadLine{Line: line, Offset: int64(off),
				Reason:  fmt.Sprintf("torn last line (%d bytes without a newline): a writer died mid-append", len(data)-off),
				Content: data[off:]})
			return bad, keep
		}
		raw := data[off : off+end]
		if t := bytes.TrimSpace(raw); len(t) > 0 {
			reason := ""
			if end+1 > MaxLine { // as the line reader sees it
				reason = ErrLineTooLong.Error()
			} else {
				reason = invalid(t)
			}
			if reason != "" {
				bad = append(bad, BadLine{Line: line, Offset: int64(off), Reason: reason, Content: raw})
				off += end + 1
				continue
			}
		}
		keep = append(keep, [2]int{off, off + end + 1})
		off += end + 1
	}
	return bad, keep
}
