package sim

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestInterruptReadInNotifications: an interrupt written while a call ran
// is not that call's INTERRUPT answer but shows in its notification count;
// the agent reads it with get_notifications and must obey it all the same
// (report its task blocked and stop), not carry on working. The server
// here is the SDK's over an in-memory transport, answering only the two
// calls the agent makes.
func TestInterruptReadInNotifications(t *testing.T) {
	ctx := context.Background()
	srv := mcp.NewServer(&mcp.Implementation{Name: "stand-in", Version: "1"}, nil)
	object := json.RawMessage(`{"type":"object"}`)
	var mu sync.Mutex
	var reported map[string]any
	srv.AddTool(&mcp.Tool{Name: "get_notifications", InputSchema: object}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{StructuredContent: map[string]any{"notifications": []any{map[string]any{
			"type": "interrupt", "action": "pause", "message": "Task tsk_1 was set to blocked by lead.", "task_id": "tsk_1",
			"instruction": `Stop working now: call report_completed(result="blocked", summary=what you did and what is left), then exit.`,
		}}}}, nil
	})
	srv.AddTool(&mcp.Tool{Name: "report_completed", InputSchema: object}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mu.Lock()
		defer mu.Unlock()
		json.Unmarshal(req.Params.Arguments, &reported)
		return &mcp.CallToolResult{StructuredContent: map[string]any{"task_id": "tsk_1"}}, nil
	})
	clientT, serverT := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(ctx, serverT, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "sim-test", Version: "1"}, nil).Connect(ctx, clientT, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	a := &agent{o: Options{Agent: "coder", Out: io.Discard}, cs: cs, token: "ses_1.x", purpose: "task"}

	for what, react := range map[string]func() error{
		// get_task's answer: its line counts the interrupt written meanwhile.
		"a call's notification line": func() error {
			done, err := a.checkReports(ctx, result{data: map[string]any{"notification": "notifications: 1 unread (1 new): call get_notifications"}})
			if !done {
				return errors.New("not done")
			}
			return err
		},
		// get_next_action's answer when the interrupt came before it.
		"get_next_action's get_notifications": func() error {
			return a.act(ctx, result{data: map[string]any{"action": "get_notifications"}})
		},
	} {
		mu.Lock()
		reported = nil
		mu.Unlock()
		if err := react(); !errors.Is(err, errInterrupt) {
			t.Errorf("%s: %v; want the agent to stop on the interrupt", what, err)
		}
		mu.Lock()
		if reported["result"] != "blocked" {
			t.Errorf("%s: report_completed got %v; want result blocked", what, reported)
		}
		mu.Unlock()
	}
}
