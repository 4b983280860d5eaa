package storage

import (
	"fmt"
	"sort"
)

// Groups is config.toml's [groups] table: named lists of agents that a
// send_message can address at once (target_group), e.g.
//
//	[groups]
//	reviewers = ["a1", "a2"]
type Groups map[string][]string

// MaxReceivers is the most receivers one message may have (a list or a
// group): a broadcast is one line per receiver, written in one call.
const MaxReceivers = 64

// Group returns the members of group name, in the config's order.
func (c *Config) Group(name string) ([]string, bool) {
	m, ok := c.Groups[name]
	return m, ok
}

// groups checks [groups]: each name a valid id, each group not empty, at
// most MaxReceivers members, each member a configured agent, named once.
func (c *configCheck) groups(gs Groups, agents []Agent) {
	ids := map[string]bool{}
	for _, a := range agents {
		ids[a.ID] = true
	}
	names := make([]string, 0, len(gs))
	for name := range gs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		members := gs[name]
		// the line only for an error: the locator is built for one
		if err := CheckAgentID(name); err != nil {
			c.fail(c.loc().find("groups", -1, name), "group name %q is invalid: use 1-64 letters, digits, '_' or '-', starting with a letter or digit (not \"system\")", Clip(name, MaxEchoedID))
			continue
		}
		if msg := groupMembersProblem(name, members, ids); msg != "" {
			c.fail(c.loc().find("groups", -1, name), "%s", msg)
		}
	}
}

// groupMembersProblem is what is wrong with a group's member list, or "".
func groupMembersProblem(name string, members []string, ids map[string]bool) string {
	if len(members) == 0 {
		return fmt.Sprintf("group %q is empty: list at least one agent id, or remove it", name)
	}
	if len(members) > MaxReceivers {
		return fmt.Sprintf("group %q has %d members: at most %d", name, len(members), MaxReceivers)
	}
	seen := map[string]bool{}
	for _, m := range members {
		switch {
		case !ids[m]:
			return fmt.Sprintf("group %q: member %q is not a configured agent: add it under [[agents]] or fix the id", name, Clip(m, MaxEchoedID))
		case seen[m]:
			return fmt.Sprintf("group %q names %q twice: list each member once", name, m)
		}
		seen[m] = true
	}
	return ""
}
