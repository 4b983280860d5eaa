package demo

import (
	"strings"

	"aipm/fsstore"
)

// The group scenario (aipm demo --scenario group, issue 25): three
// simulated agents hold one group conversation, turns in a fixed order,
// and each answers a broadcast to its sender alone.

// demoScenario is the scenario aipm demo runs for --scenario name (a
// function, not a map: the scenarios run aipm commands, whose tree holds
// the demo command).
func demoScenario(name string) (func(d *demo) error, bool) {
	switch name {
	case "default":
		return func(d *demo) error {
			if err := d.delegatedShiritori(); err != nil {
				return err
			}
			if err := d.handEditInterrupts(); err != nil {
				return err
			}
			return d.humanAsks()
		}, true
	case "group":
		return (*demo).groupConversation, true
	}
	return nil, false
}

// groupGames are the group scenario's requests, by --lang.
var groupGames = map[string]string{
	"en": "word chain with reviewer and tester, 9 turns, start with apple",
	"ja": "shiritori with reviewer and tester, 9 turns, start with りんご",
}

// groupConversation: lead asks coder for a word game with reviewer and
// tester; coder starts a group conversation (the watcher starts the other
// two), they play in turn order to max_turns, and every party is told of
// the end once. Then lead sends one message to the group "team", and each
// member answers lead alone.
func (d *demo) groupConversation() error {
	d.note("%s", d.game.rules)
	if _, err := d.aipm("send", "--to", "coder", groupGames[d.lang]); err != nil {
		return err
	}
	if err := d.until("the group conversation to end and every party to be told", func() bool {
		convs, _ := d.store.Conversations().List(d.ctx, mustConfig(d.store), true)
		for _, c := range convs {
			if c.IsGroup() && c.State == fsstore.ConvEnded {
				return true
			}
		}
		return false
	}); err != nil {
		return err
	}
	if _, err := d.aipm("send", "--group", "team", "standup in 5 minutes"); err != nil {
		return err
	}
	return d.until("coder, reviewer and tester to answer lead and exit", func() bool {
		msgs, _ := d.store.Tail("lead", 20)
		answered := map[string]bool{}
		for _, m := range msgs {
			if m.ReceivedBy("lead") && strings.Contains(m.Content, "standup in 5 minutes") {
				answered[m.SenderID] = true
			}
		}
		runs, _ := d.store.Runs().List()
		return len(answered) == 3 && len(runs) == 0
	})
}

// groupSetUp adds the third simulated agent, tester, and the group team.
func (d *demo) groupSetUp() error {
	if _, err := d.aipm("agent", "add", "tester", "--type", "ai", "--parent", "lead", "--command", "aipm sim", "--save-passkey"); err != nil {
		return err
	}
	if err := d.store.EditConfig(d.ctx, func(text []byte, _ *fsstore.Config) ([]byte, error) {
		return append(text, "\n[groups]\nteam = [\"coder\", \"reviewer\", \"tester\"]\n"...), nil
	}); err != nil {
		return err
	}
	d.note("config.toml [groups]: team = [\"coder\", \"reviewer\", \"tester\"]")
	return nil
}
