package hook

import (
	"fmt"
	"strings"

	"aipm/fsstore"
	"aipm/internal/clients"
)

// Each answer is written in the client's own form (clients.Dialect),
// clipped to MaxContext first.

// MaxContext bounds what one hook adds to the model's context, well under
// the clients' 10,000 characters.
const MaxContext = 4000

func answered(a clients.Answer) Result {
	return Result{Stdout: a.Stdout, Stderr: a.Stderr, Exit: a.Exit}
}

// addContext adds text to the model's context at event.
func addContext(d clients.Dialect, event, text string) Result {
	return answered(d.Context(event, fsstore.Clip(text, MaxContext)))
}

// denied refuses the tool call, with reason shown to the model, and
// carries den, why it was refused, for Main to record.
func denied(d clients.Dialect, reason string, den fsstore.Denial) Result {
	res := answered(d.Deny(fsstore.Clip(reason, MaxContext)))
	res.Denied = &den
	return res
}

// block keeps the model working at Stop, with reason as what to do.
func block(d clients.Dialect, reason string) Result {
	return answered(d.Block(fsstore.Clip(reason, MaxContext)))
}

// interruptText states the interrupt and what the session does about it
// (the same instruction as aipm's tool responses).
func interruptText(ses fsstore.Session, n *fsstore.Notification) string {
	return fmt.Sprintf("aipm interrupt for %s: %s %s", ses.Agent, n.Message, fsstore.InterruptInstruction(ses.Purpose, n.Kind))
}

// earlierText shows whole, one line each, the unread notifications before
// an interrupt, handed with it; "" when there are none.
func earlierText(ns []fsstore.Notification) string {
	var b strings.Builder
	for _, n := range ns {
		from := ""
		if n.From != "" {
			from = n.From + ": "
		}
		fmt.Fprintf(&b, "\naipm: unread before it (read with it): %s%s", from, n.Message)
	}
	return b.String()
}

// listed is how many items of one kind a notice names before "and N more".
const listed = 5

// untoldText states what n holds, one line per kind, each line starting
// with a newline; "" when n is empty. Factual statements only: the model
// decides.
func untoldText(n fsstore.Notices) string {
	var b strings.Builder
	if len(n.Messages) > 0 {
		fmt.Fprintf(&b, "\naipm: %s for you (%s). get_next_action hands them out (get_pending_messages).", count(len(n.Messages), "new message"), bySender(n.Messages))
	}
	for i, c := range n.Requests {
		if i == listed {
			fmt.Fprintf(&b, "\naipm: and %d more conversation requests.", len(n.Requests)-listed)
			break
		}
		fmt.Fprintf(&b, "\naipm: %s asks for a conversation (%s); get_next_action accepts it.", c.Initiator, c.ID)
	}
	for i, c := range n.Ended {
		if i == listed {
			fmt.Fprintf(&b, "\naipm: and %d more conversations ended.", len(n.Ended)-listed)
			break
		}
		fmt.Fprintf(&b, "\naipm: conversation %s ended (%s).", c.ID, c.EndReason)
	}
	for i, d := range n.Delegations {
		if i == listed {
			fmt.Fprintf(&b, "\naipm: and %d more delegations.", len(n.Delegations)-listed)
			break
		}
		fmt.Fprintf(&b, "\naipm: delegation %s (task %s) waits for this chat session; get_next_action takes it.", d.ID, d.TaskID)
	}
	if len(n.Notifications) > 0 {
		first := n.Notifications[len(n.Notifications)-1]
		fmt.Fprintf(&b, "\naipm: %s (newest: %q); get_notifications shows them.", count(len(n.Notifications), "new notification"), fsstore.Clip(first.Message, 200))
	}
	return b.String()
}

// bySender counts msgs per sender, in the order they first wrote.
func bySender(msgs []fsstore.Message) string {
	var order []string
	per := map[string]int{}
	for _, m := range msgs {
		if per[m.SenderID] == 0 {
			order = append(order, m.SenderID)
		}
		per[m.SenderID]++
	}
	parts := make([]string, 0, len(order))
	for i, s := range order {
		if i == listed {
			parts = append(parts, fmt.Sprintf("and %d more senders", len(order)-listed))
			break
		}
		parts = append(parts, fmt.Sprintf("%d from %s", per[s], s))
	}
	return strings.Join(parts, ", ")
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
