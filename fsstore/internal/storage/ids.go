package storage

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Id prefixes (DESIGN section 3). Every id is its prefix followed by 26
// Crockford base32 characters: 48 bits of Unix milliseconds, then 80 bits
// that are random for the first id of a millisecond and incremented after,
// so ids from one process sort in creation order and ids from different
// processes sort by millisecond.
const (
	PrefixMessage      = "msg_"
	PrefixConversation = "cnv_"
	PrefixDelegation   = "dlg_"
	PrefixTask         = "tsk_"
	PrefixNotification = "ntf_"
	PrefixSession      = "ses_"
	PrefixLease        = "lse_"
	// PrefixRun starts the id of one run of an agent's client: aipm
	// watch's runs, and aipm launch's by hand.
	PrefixRun     = "run_"
	prefixReceipt = "rcp_"
)

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

var (
	idMu      sync.Mutex
	idLastMS  uint64
	idEntropy [10]byte
)

// NewID returns a new time-sortable id with the given prefix.
func NewID(prefix string) string {
	ms := uint64(time.Now().UnixMilli())
	idMu.Lock()
	if ms <= idLastMS {
		ms = idLastMS // clock stepped back or same millisecond: stay monotonic
		incrementEntropy()
	} else {
		idLastMS = ms
		if _, err := rand.Read(idEntropy[:]); err != nil {
			panic(fmt.Sprintf("crypto/rand: %v", err)) // never fails on Linux
		}
		idEntropy[0] &= 0x7f // leave room to increment without wrapping
	}
	var raw [16]byte
	binary.BigEndian.PutUint64(raw[0:8], ms<<16)
	copy(raw[6:], idEntropy[:])
	idMu.Unlock()
	return prefix + encodeBase32(raw)
}

func incrementEntropy() {
	for i := len(idEntropy) - 1; i >= 0; i-- {
		idEntropy[i]++
		if idEntropy[i] != 0 {
			return
		}
	}
}

// encodeBase32 writes the 128 bits of raw as 26 characters, the first of
// which carries only the top 3 bits (as in ULID).
func encodeBase32(raw [16]byte) string {
	hi := binary.BigEndian.Uint64(raw[0:8])
	lo := binary.BigEndian.Uint64(raw[8:16])
	var out [26]byte
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
}

// The forms below are checked by hand, not by regular expressions: a
// process compiled those at every start (the bounded repeats nest deeply),
// and aipm serve must answer soon after it starts (DESIGN section 13, P4).
// ids_test.go holds each form's regular expression and checks the two agree.

// isAgentID reports whether id matches ^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$.
func isAgentID(id string) bool {
	if len(id) == 0 || len(id) > 64 || !isAlnum(id[0]) {
		return false
	}
	for i := 1; i < len(id); i++ {
		if c := id[i]; !isAlnum(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// isIDBody reports whether body is the 26 characters after an id's prefix:
// ^[0-7][0-9A-HJKMNP-TV-Z]{25}$ (a 128-bit ULID in Crockford's base 32).
func isIDBody(body string) bool {
	return len(body) == 26 && '0' <= body[0] && body[0] <= '7' && IsCrockford(body)
}

// IsCrockford reports whether s is made only of Crockford base-32 digits
// (upper case): ^[0-9A-HJKMNP-TV-Z]*$.
func IsCrockford(s string) bool {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(crockford, s[i]) < 0 {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return '0' <= c && c <= '9' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z'
}

// CheckAgentID reports whether id may name an agent (and so a directory).
func CheckAgentID(id string) error {
	if id == SystemSender {
		return fmt.Errorf("agent id %q is reserved for messages the system writes; choose another id", id)
	}
	if !isAgentID(id) {
		return fmt.Errorf("agent id %q is invalid: use 1-64 letters, digits, '_' or '-', starting with a letter or digit", Clip(id, MaxEchoedID))
	}
	return nil
}

// CheckID reports whether id is a well-formed id with the given prefix.
func CheckID(prefix, id string) error {
	body, ok := strings.CutPrefix(id, prefix)
	if !ok || !isIDBody(body) {
		return fmt.Errorf("%q is not a valid %s id: expected %s followed by 26 characters, as returned by aipm", Clip(id, MaxEchoedID), strings.TrimSuffix(prefix, "_"), prefix)
	}
	return nil
}

// CheckPurpose reports whether p is a session purpose.
func CheckPurpose(p string) error {
	if p != PurposeTask && p != PurposeChat {
		return fmt.Errorf("purpose %q is invalid: use task or chat", p)
	}
	return nil
}

// SystemSender is the reserved sender id of messages the system writes.
const SystemSender = "system"

// MaxEchoedID is how much of a malformed id an error repeats.
const MaxEchoedID = 80

// Clip returns s if it has at most n bytes, else its first n bytes (whole
// characters) and how long it was: an error repeats what it was given, but
// never a huge value whole.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", s[:cut], len(s))
}

// Session purposes (DESIGN section 5).
const (
	PurposeTask = "task"
	PurposeChat = "chat"
)
