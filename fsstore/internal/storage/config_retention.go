package storage

import (
	"bytes"
	"time"
)

// RetentionConfig is config.toml's [retention] section: how much of each
// agent's logs aipm compact (and aipm watch, every Every) keeps. A count
// left out (0) takes DefaultRetention's. Whatever the counts say,
// compaction keeps every line a reader has not consumed (Store.Compact).
type RetentionConfig struct {
	// Every is how often aipm watch compacts ("never": only aipm compact).
	Every TTL `toml:"every"`
	// ChatLines, NotificationLines and ReceiptLines are the newest lines
	// kept of each agent's chat.jsonl, notifications.jsonl and receipts.jsonl.
	ChatLines         int `toml:"chat_lines"`
	NotificationLines int `toml:"notification_lines"`
	ReceiptLines      int `toml:"receipt_lines"`
}

// DefaultRetention keeps much: 10,000 chat lines per agent is months of
// a busy agent's talk, and a few MB.
var DefaultRetention = RetentionConfig{
	Every:             TTL{Duration: time.Hour, Set: true},
	ChatLines:         10000,
	NotificationLines: 1000,
	ReceiptLines:      10000,
}

// Retention is the config's [retention] with the defaults filled in.
func (c *Config) Retention() RetentionConfig {
	var r RetentionConfig
	if c != nil {
		r = c.Retain
	}
	d := DefaultRetention
	if !r.Every.Set {
		r.Every = d.Every
	}
	for _, p := range []struct{ v, def *int }{{&r.ChatLines, &d.ChatLines}, {&r.NotificationLines, &d.NotificationLines}, {&r.ReceiptLines, &d.ReceiptLines}} {
		if *p.v == 0 {
			*p.v = *p.def
		}
	}
	return r
}

// retention checks [retention]: the counts are positive (0 is the
// default only when the key is left out).
func (c *configCheck) retention(r RetentionConfig) {
	for _, k := range []struct {
		key string
		v   int
	}{{"chat_lines", r.ChatLines}, {"notification_lines", r.NotificationLines}, {"receipt_lines", r.ReceiptLines}} {
		if k.v < 0 || k.v == 0 && c.sets("retention", k.key) {
			c.fail(c.loc().find("retention", -1, k.key), "%s = %d must be at least 1: it is how many of the newest lines compaction keeps", k.key, k.v)
		}
	}
}

// sets says whether the config sets key in section (as the locator finds
// it). The locator reads a key's name as the text writes it, so a config
// whose text never names key does not set it: that is answered without
// building the locator, which every command that loads a valid config
// (each hook, P8a) would otherwise build for this question alone.
func (c *configCheck) sets(section, key string) bool {
	return bytes.Contains(c.data, []byte(key)) && c.loc().has(section, -1, key)
}
