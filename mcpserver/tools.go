package mcpserver

import (
	"fmt"
	"reflect"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolSpec is everything aipm knows about one tool, in one place: what
// tools/list shows of it, the level it requires of the caller's session,
// how the gate treats it, and the function that registers its handler.
// Each tool's spec is made by one function beside its handler (getTaskTool
// in tools_task.go, ...); tools lists them all, and every lookup by tool
// name (the gate, help) is derived from that list.
type toolSpec struct {
	// tool is its name, description, annotations and enums (as addTool
	// takes them); each registration works on a copy.
	tool mcp.Tool
	// level is what the tool requires of the caller's session (DESIGN
	// section 5).
	level Level
	// passesInterrupt: the tool runs even while an interrupt is unread, so
	// that the agent can comply (DESIGN section 6).
	passesInterrupt bool
	// passesUnreadable: the tool runs even when the session's
	// notifications cannot be read; every other call is refused then,
	// since one of them may be an interrupt (fail closed).
	passesUnreadable bool
	// handsBatch: the tool's answer may hand the session a batch (when it
	// counts as read: links, in links.go).
	handsBatch bool
	// readsUnread: the tool's answer depends on what the session has not
	// read (get_next_action), so what the session holds is settled first
	// (links, in links.go, rule 4).
	readsUnread bool
	// readsStream is the stream the tool reads as the session, if any:
	// that read acknowledges the session's previous batch of it in its own
	// write, so the gate leaves it out (one document write per
	// get_pending_messages instead of two). get_notifications reads its
	// purpose's notifications stream (StreamNotifications stands for it):
	// it lists again what the previous answer only showed (an interrupt in
	// a replaced answer), and acknowledges the batch itself, even when it
	// only peeks (fsstore.Store.ListNotifications).
	readsStream string
	// takesAck: the tool takes an ack argument (Acknowledgement), the
	// proof that the client read the answer that carried it (links.go,
	// rule 3): the reading tools, and those an interrupt says to call.
	takesAck bool
	// marksRead: the tool marks notifications read, so the notification
	// line is counted after it ran.
	marksRead bool
	// toldOfMessages: the tool's own answer tells a chat session of its
	// unread messages (get_next_action, get_pending_messages), so the
	// notification line does not add the new_message notice.
	toldOfMessages bool
	// page is the page limit of a listing tool (its limit argument).
	page pageLimit
	// add registers the tool's handler for tool, a copy of the field.
	add func(srv *mcp.Server, s *Server, tool *mcp.Tool)
}

// tools is the one list of the tools aipm serves: DESIGN section 5.
func tools() []toolSpec {
	return []toolSpec{
		authenticateTool(),
		helpTool(),
		logoutTool(),
		getNextActionTool(),
		getNotificationsTool(),
		getTaskTool(),
		listTasksTool(),
		claimTaskTool(),
		updateTaskStatusTool(),
		reportCompletedTool(),
		sendMessageTool(),
		getPendingMessagesTool(),
		respondChatTool(),
		markReadTool(),
		startConversationTool(),
		endConversationTool(),
		sendConversationMessageTool(),
		respondConversationMessageTool(),
		getConversationMessagesTool(),
		requestTaskTool(),
		delegateTool(),
		reportDelegationTool(),
		notifyTaskSessionTool(),
		leaseTool(),
		updateTaskFromChatTool(),
		startTaskFromChatTool(),
		reportBlockFromChatTool(),
		reportCompletionFromChatTool(),
	}
}

// toolsByName finds a tool's spec by its name; it is made from tools once.
var toolsByName = sync.OnceValue(func() map[string]toolSpec {
	m := map[string]toolSpec{}
	for _, t := range tools() {
		if _, dup := m[t.tool.Name]; dup {
			panic("tool " + t.tool.Name + " is listed twice in tools()")
		}
		m[t.tool.Name] = t
	}
	return m
})

// lookupTool returns the spec of the tool named name.
func lookupTool(name string) (toolSpec, bool) {
	t, ok := toolsByName()[name]
	return t, ok
}

// The annotations every tool sets, all four hints explicit. No aipm tool
// reaches outside the project's .ai-pm directory (openWorld false) or
// deletes anything the caller cannot see again (destructive false); Codex
// runs tools that say both without asking.
var (
	// readOnly tools change nothing the caller asked for (they may apply
	// a due conversation timeout, as any reader of a conversation does).
	readOnly = annotations(true, true)
	// mutating tools write, and a repeated call has a further effect (a
	// second message, a cursor moved again).
	mutating = annotations(false, false)
	// idempotent tools write, and repeating the same call changes nothing
	// more (it is refused, or finds the work already done).
	idempotent = annotations(false, true)
)

func annotations(readOnly, idempotent bool) *mcp.ToolAnnotations {
	no := false
	return &mcp.ToolAnnotations{ReadOnlyHint: readOnly, IdempotentHint: idempotent, DestructiveHint: &no, OpenWorldHint: &no}
}

// notificationField is the structured-content field that carries the
// notification line (DESIGN section 6); the gate fills it in.
const notificationField = "notification"

// addTool registers a typed tool. Its input schema is In's, with the
// allowed values of some fields listed when t.InputSchema holds enums; its
// output schema is Out's, plus the notification line the gate adds to every
// authenticated result, so that a client validating structured content
// against the schema accepts it. Both are tidied (see tidy).
//
// Both schemas are listed from schemas/ (see servedSchemas), which
// TestServedSchemas keeps byte for byte equal to what inference from In and
// Out gives: inferring them for every tool at every start cost aipm serve
// milliseconds before its first answer. Calls run through typedHandler
// (toolcall.go), which infers them on the tool's first call. A Server whose
// sdkTools is set registers the tool through the SDK's mcp.AddTool instead,
// schemas inferred at once: the reference both of those tests compare with.
func addTool[In, Out any](s *Server, srv *mcp.Server, t *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) {
	if a := t.Annotations; a == nil || a.DestructiveHint == nil || a.OpenWorldHint == nil {
		panic("tool " + t.Name + " must set all four annotation hints")
	}
	e, ok := t.InputSchema.(enums)
	if !ok && t.InputSchema != nil {
		panic(fmt.Sprintf("tool %s: InputSchema may only hold enums", t.Name))
	}
	if s.sdkTools {
		t.InputSchema, t.OutputSchema = inputSchema[In](e), outputSchema[Out](t.Name)
		mcp.AddTool(srv, t, h)
		return
	}
	in, out := servedSchemas(t.Name)
	t.InputSchema, t.OutputSchema = in, out
	srv.AddTool(t, typedHandler(&typedTool{
		name:   t.Name,
		listed: in,
		input:  func() *jsonschema.Schema { return inputSchema[In](e) },
		output: fullOutputSchema[Out],
		check:  s.checkSchemas,
	}, h))
}

// outputSchema is the output schema tool lists: Out's inferred schema,
// tidied, with the notification line (which the server instructions
// explain, once), and the records several tools share spelled out only in
// their home tool's schema (see sharedViews). It describes no field: no
// client shows an output schema to the model, so a description there is
// read by nobody and costs every tools/list answer (TestSize). What a field
// means is said where it is declared, in its description tag, which the
// full schema keeps; what the model must know of an answer, the answer
// says (its instruction).
func outputSchema[Out any](tool string) *jsonschema.Schema {
	opts := &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{}}
	for _, v := range sharedViews {
		if tool == "" || v.home == tool {
			continue // spelled out
		}
		opts.TypeSchemas[v.typ] = &jsonschema.Schema{Type: "object", Title: v.title}
	}
	schema, err := jsonschema.For[Out](opts)
	if err != nil {
		panic(fmt.Sprintf("output schema of %T: %v", *new(Out), err))
	}
	if schema.Properties == nil {
		schema.Properties = map[string]*jsonschema.Schema{}
	}
	schema.Properties[notificationField] = &jsonschema.Schema{Type: "string"}
	if tool != "" {
		undescribed(schema)
	}
	return tidy(schema)
}

// fullOutputSchema is Out's output schema with every shared record spelled
// out (tool "" spells out them all): what a call's result is checked
// against when EnvCheckSchemas is set. It accepts less than the listed
// schema, never more.
func fullOutputSchema[Out any]() *jsonschema.Schema { return outputSchema[Out]("") }

// sharedViews are the records that several tools return. Each is spelled
// out, field by field, in the output schema of one tool, its home; in every
// other tool's output schema it is an object titled with its home, so that
// tools/list states each shape once (TestSize). No client shows output
// schemas to the model; clients validate structured content against them
// (and Codex keeps them as host metadata), which the titled objects serve
// as well.
var sharedViews = []struct {
	typ         reflect.Type
	home, title string
}{
	{reflect.TypeFor[TaskView](), "get_task", "task: fields as in get_task"},
	{reflect.TypeFor[DelegationView](), "get_task", "delegation: fields as in get_task"},
	{reflect.TypeFor[ConversationView](), "get_task", "conversation: fields as in get_task"},
	{reflect.TypeFor[MessageView](), "get_conversation_messages", "message: fields as in get_conversation_messages"},
	{reflect.TypeFor[LeaseView](), "lease", "lease: fields as in lease"},
}

// enums lists the allowed values of some input fields of a tool. Set as its
// InputSchema, it asks addTool for In's schema with those values listed.
type enums map[string][]string

// Session is the argument every authenticated tool takes. What it is, and
// that it is needed, the server instructions say once, for every tool: the
// schemas do not list it as required, since the gate refuses a call without
// it (session_required) before its arguments are checked.
type Session struct {
	SessionToken string `json:"session_token,omitempty"`
}

// Acknowledgement is the argument of the tools a session calls after an
// answer that handed it something (toolSpec.takesAck): the ack that answer
// carried, the client's proof that it read it (links.go, rule 3). The gate
// reads it before the tool runs; the tool ignores it. The answer that
// carries an ack says to pass it; the schemas do not describe it (TestSize).
type Acknowledgement struct {
	Ack string `json:"ack,omitempty"`
}
