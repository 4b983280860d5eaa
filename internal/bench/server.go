package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// server is one `aipm serve` process and its client session.
type server struct {
	cs             *mcp.ClientSession
	cmd            *exec.Cmd
	token          string
	agent, passkey string
	closing        atomic.Bool // close was called: the session's end is no failure
}

// serve starts aipm serve in store's project and opens a chat session for
// agent (through a trigger, as the watcher would write it).
func (b *bench) serve(store *fsstore.Store, agent, passkey string, stderr io.Writer) (*server, error) {
	return b.serveOver(b.localLink(), store, agent, passkey, stderr)
}

func (s *server) call(ctx context.Context, tool string, args map[string]any, out any) error {
	args["session_token"] = s.token
	return callTool(ctx, s.cs, tool, args, out)
}

func (s *server) close() {
	s.closing.Store(true)
	s.cs.Close()
}

// callTool calls a tool and decodes its structured result into out.
func callTool(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any, out any) error {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return fmt.Errorf("%s: %w", tool, err)
	}
	if res.IsError {
		var text []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text = append(text, tc.Text)
			}
		}
		return fmt.Errorf("%s: %s", tool, strings.Join(text, " "))
	}
	if out == nil {
		return nil
	}
	data, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}
