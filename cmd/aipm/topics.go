package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"aipm/fsstore"
	"aipm/mcpserver"
)

// Help topics: pages of aipm help that are not commands ("aipm help ids").
// Cobra lists them under "Additional help topics".
func newHelpTopics() []*cobra.Command {
	topic := func(use, short, long string) *cobra.Command {
		return &cobra.Command{Use: use, Short: short, Long: long}
	}
	return []*cobra.Command{
		topic("exit-codes", "What aipm's exit codes mean", `Every aipm command follows one rule:

  0    success
  1    the command was right, but the operation failed or the project's state
       refuses it: a status transition that is not allowed, agent remove of an
       agent with open tasks, doctor with problems left, a disk error
  2    a usage mistake, the command line is wrong: an unknown command (also
       with --help) or flag, a group such as aipm task without one of its
       commands (its help is printed), a bad value (task status ID bogus, an
       empty title), a malformed, unknown or ambiguous id or agent, no
       project here
  130  interrupted by Ctrl-C (or SIGTERM), e.g. ending log --follow or
       status --watch

Errors are one line on stderr: "aipm: " and a sentence saying what was wrong
and what to do.`),
		topic("ids", "How to type ids: unique prefixes, with or without tsk_", `Ids are a prefix (tsk_, msg_, ses_, ...) and 26 characters that sort by
creation time. Wherever a task id is taken, any unique start of it works, with
or without "tsk_", in either case:

  aipm task show tsk_01KAQ7ZB3CXW5T6V7Y8Z9A0B1C
  aipm task show 01kaq7

A start that matches several tasks is refused (exit 2) with the list of
matches; type more of the id. Shell completion (aipm completion) offers the
ids with their status and title, after "tsk_" or after a bare start (01KAQ7).

Tables (task list, conversations, delegations, status) print each id by its
shortest start that no other id of its kind shares, at least 8 characters
after the prefix, so the id as printed can be typed back. --json, and
--quiet (-q) on the list commands, print the whole ids.`),
		topic("environment", "Environment variables aipm reads", environmentHelp()),
	}
}

// environmentHelp is aipm help environment: every variable aipm reads, the
// names taken from where they are defined.
func environmentHelp() string {
	return fmt.Sprintf(`For every command:

AIPM_DIR           the project directory, when --dir is not given (else the
                   nearest directory upwards that holds .ai-pm/)
AIPM_AS            who CLI changes are credited to, when --as is not given
                   (else the project's only human)
NO_COLOR           any value turns colour off (colour is only used on a
                   terminal)
COLUMNS            how wide tables may be: long titles are cut to fit
                   (default the terminal's width; no cut when output is
                   not a terminal)
TZ                 the local time zone of displayed times (--utc shows UTC)

For aipm serve (and aipm sim), the agent's credential, so that the passkey
never passes through the model; aipm watch sets them for the agents it starts:

%-18s the agent the server holds a credential for: authenticate
                   then needs no passkey
%-18s a file holding that agent's passkey, mode 0600 (any other
                   mode is refused at start)
%-18s the passkey itself (instead of %s)
%-18s task or chat: the purpose of the session authenticate opens
                   (else chosen from the agent's work)
%-18s the project directory of an agent aipm watch started
%-18s the run that started the process: its sessions record it
                   and end when the process exits

For aipm serve and aipm watch:

AIPM_LOG           the log level on stderr: debug, info, warn, error
GOMAXPROCS         aipm serve runs with 1 unless this is set
GOGC               aipm serve runs with 50 unless this is set
%-18s 1: also check every tool call and result against the tool's
                   schemas (the tests set it)`,
		fsstore.EnvAgentID, fsstore.EnvPasskeyFile, fsstore.EnvPasskey, fsstore.EnvPasskeyFile,
		fsstore.EnvPurpose, fsstore.EnvProjectDir, fsstore.EnvRunID, mcpserver.EnvCheckSchemas)
}
