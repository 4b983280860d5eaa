package mcpserver

import (
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolSpec is one tool: its name (whose level is in levels.go) and the
// function that registers it.
type toolSpec struct {
	name string
	add  func(*mcp.Server, *Server)
}

// tools is the one list of the tools this version serves.
func tools() []toolSpec {
	return []toolSpec{
		{"authenticate", addAuthenticate},
		{"help", addHelp},
		{"logout", addLogout},
		{"get_next_action", addGetNextAction},
		{"get_notifications", addGetNotifications},
		{"get_my_task", addGetMyTask},
		{"get_task", addGetTask},
		{"list_tasks", addListTasks},
		{"update_task_status", addUpdateTaskStatus},
		{"report_completed", addReportCompleted},
		{"send_message", addSendMessage},
		{"get_pending_messages", addGetPendingMessages},
		{"respond_chat", addRespondChat},
		{"start_conversation", addStartConversation},
		{"end_conversation", addEndConversation},
		{"send_conversation_message", addSendConversationMessage("send_conversation_message")},
		{"respond_conversation_message", addSendConversationMessage("respond_conversation_message")},
		{"get_conversation_messages", addGetConversationMessages},
		{"request_task", addRequestTask},
		{"delegate_to_chat_session", addDelegate},
		{"report_delegation_completed", addReportDelegation},
		{"get_task_conversations", addGetTaskConversations},
		{"notify_task_session", addNotifyTaskSession},
		{"update_task_from_chat", addUpdateTaskFromChat},
		{"start_task_from_chat", addStartTaskFromChat},
	}
}

// The annotations every tool sets, all four hints explicit. No aipm tool
// reaches outside the project's .ai-pm directory (openWorld false) or
// deletes anything the caller cannot see again (destructive false); Codex
// runs tools that say both without asking.
var (
	// readOnly tools change no file.
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
// against the schema accepts it.
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
		t.InputSchema, t.OutputSchema = nil, outputSchema[Out]() // the SDK infers the input schema from In
		if e != nil {
			t.InputSchema = inputSchema[In](e)
		}
		mcp.AddTool(srv, t, h)
		return
	}
	in, out := servedSchemas(t.Name)
	t.InputSchema, t.OutputSchema = in, out
	srv.AddTool(t, typedHandler(&typedTool{
		name:   t.Name,
		listed: in,
		input:  func() *jsonschema.Schema { return inputSchema[In](e) },
		output: outputSchema[Out],
		check:  s.checkSchemas,
	}, h))
}

// outputSchema is Out's inferred schema with the notification line.
func outputSchema[Out any]() *jsonschema.Schema {
	schema, err := jsonschema.For[Out](nil)
	if err != nil {
		panic(fmt.Sprintf("output schema of %T: %v", *new(Out), err))
	}
	if schema.Properties == nil {
		schema.Properties = map[string]*jsonschema.Schema{}
	}
	schema.Properties[notificationField] = &jsonschema.Schema{
		Type:        "string",
		Description: `"notifications: none", or how many notifications wait for you: then call get_notifications`,
	}
	return schema
}

// enums lists the allowed values of some input fields of a tool. Set as its
// InputSchema, it asks addTool for In's schema with those values listed.
type enums map[string][]string

// Session is the argument every authenticated tool takes.
type Session struct {
	SessionToken string `json:"session_token" jsonschema:"the token authenticate returned"`
}
