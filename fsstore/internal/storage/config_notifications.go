package storage

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Notification types.
const (
	NotifyInterrupt = "interrupt"
	NotifyInfo      = "info"
)

// NotifyNewMessage is the notice a send creates for its receiver: derived
// from unread chat lines, never written to notifications.jsonl.
const NotifyNewMessage = "new_message"

// notificationsConfig is config.toml's [notifications] section.
type notificationsConfig struct {
	TTL notificationTTLs `toml:"ttl"`
}

// notificationTTLs is [notifications.ttl]: how long a notification of each
// type may wait unread before it expires (is never delivered or counted).
// A key left out takes DefaultNotificationTTLs.
type notificationTTLs struct {
	Interrupt  TTL `toml:"interrupt"`
	Info       TTL `toml:"info"`
	NewMessage TTL `toml:"new_message"`
}

// defaultNotificationTTLs are the times to live of the keys the config
// leaves out. An interrupt never expires: it is the one notice that stops
// an agent, and an agent that has not heard it must not go on working
// because it waited long enough (one about a task that is still blocked or
// cancelled never expires even when a TTL is set: see Store.expired).
var defaultNotificationTTLs = notificationTTLs{
	Interrupt:  TTL{Set: true},
	Info:       TTL{Duration: 7 * 24 * time.Hour, Set: true},
	NewMessage: TTL{Duration: 24 * time.Hour, Set: true},
}

// TTL is a time to live in config.toml: "never", a duration such as "90m"
// or "24h", or a number of days such as "7d". Duration 0 means never.
type TTL struct {
	time.Duration
	// Set says the config (or the default) gave a value.
	Set bool
}

// UnmarshalText reads "never", a duration ("90m") or a number of days ("7d").
func (t *TTL) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "never" {
		*t = TTL{Set: true}
		return nil
	}
	v, err := parseTTL(s)
	if err != nil {
		return fmt.Errorf("invalid time to live %q: write \"never\", a duration like \"90m\" or \"24h\", or days like \"7d\"", b)
	}
	if v <= 0 {
		return fmt.Errorf("time to live %q must be positive: write \"never\" for no expiry", b)
	}
	*t = TTL{Duration: v, Set: true}
	return nil
}

func (*TTL) tomlKind() string {
	return `"never" or a time in quotes, such as "90m", "24h" or "7d"`
}

func parseTTL(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n > 100000 {
			return 0, fmt.Errorf("bad days %q", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}

// MarshalText writes "never" for no time to live, else the duration.
func (t TTL) MarshalText() ([]byte, error) {
	if t.Duration == 0 {
		return []byte("never"), nil
	}
	return []byte(t.String()), nil
}

// NotificationTTL is how long a notification of type typ lives unread
// (0: for ever), as the config says or by default. An unknown type never
// expires.
func (c *Config) NotificationTTL(typ string) time.Duration {
	var ttls notificationTTLs
	if c != nil {
		ttls = c.Notifications.TTL
	}
	return ttls.of(typ)
}

// of is the time to live of typ in t, the default where t has none.
func (t notificationTTLs) of(typ string) time.Duration {
	pick := func(v, def TTL) time.Duration {
		if v.Set {
			return v.Duration
		}
		return def.Duration
	}
	d := defaultNotificationTTLs
	switch typ {
	case NotifyInterrupt:
		return pick(t.Interrupt, d.Interrupt)
	case NotifyInfo:
		return pick(t.Info, d.Info)
	case NotifyNewMessage:
		return pick(t.NewMessage, d.NewMessage)
	}
	return 0
}

// SetNotificationTTLs makes cfg's times to live the ones this store's
// reads apply (LoadConfig).
func (s *Files) SetNotificationTTLs(cfg *Config) {
	ttls := cfg.Notifications.TTL
	s.ttls.Store(&ttls)
}

// NotificationTTL is the time to live of typ in force (0: for ever).
func (s *Files) NotificationTTL(typ string) time.Duration {
	var ttls notificationTTLs
	if p := s.ttls.Load(); p != nil {
		ttls = *p
	}
	return ttls.of(typ)
}
