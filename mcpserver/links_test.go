package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"aipm/fsstore"
)

// linksFixture is a links over a project whose AI agent coder has a chat
// session and one message from lead to read.
type linksFixture struct {
	t      *testing.T
	store  *fsstore.Store
	ls     *links
	ses    fsstore.Session
	conns  map[string]*linkConn
	ids    int64
	answer *link // the answer that handed the message
}

func newLinksFixture(t *testing.T) *linksFixture {
	t.Helper()
	ctx := context.Background()
	store, err := fsstore.Init(t.TempDir(), "test")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for _, a := range []fsstore.NewAgent{
		{ID: "lead", Type: fsstore.AgentHuman, Role: fsstore.RoleManager},
		{ID: "coder", Type: fsstore.AgentAI, Parent: "lead"},
	} {
		if keys[a.ID], err = store.AddAgent(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := store.LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	ses, _, err := store.Authenticate(ctx, cfg, "coder", keys["coder"], "", fsstore.PurposeChat)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Send(ctx, cfg, fsstore.OutgoingMessage{From: "lead", To: "coder", Content: "hello"}); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	return &linksFixture{t: t, store: store, ls: newLinks(store, log), ses: ses, conns: map[string]*linkConn{}}
}

// conn is the ordered connection named name ("" for none: an order nobody
// knows).
func (f *linksFixture) conn(name string) *linkConn {
	if name == "" {
		return nil
	}
	if f.conns[name] == nil {
		f.conns[name] = &linkConn{}
	}
	return f.conns[name]
}

// request is a request that comes in on the connection named conn: a
// JSON-RPC request over a pipe ("pipe..."), an HTTP request otherwise
// (whose connection links does not know: its order proves nothing).
func (f *linksFixture) request(conn string) *link {
	if strings.HasPrefix(conn, "pipe") {
		f.ids++
		return f.ls.arrive(f.conn(conn), rpcID(f.t, f.ids))
	}
	return f.ls.addWithin(context.Background())
}

// rpcID is the JSON-RPC id n.
func rpcID(t *testing.T, n int64) jsonrpc.ID {
	id, err := jsonrpc.MakeID(float64(n))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// The calls of the steps, as the gate describes them to links.begin.
var (
	pendingMessages = callKind{tool: "get_pending_messages", hands: true, readStreams: []string{fsstore.StreamChat}}
	listTasks       = callKind{tool: "list_tasks"}
	nextAction      = callKind{tool: "get_next_action", reads: true}
)

// A linkStep is one thing that happens to the links of the fixture.
type linkStep struct {
	what string
	do   func(f *linksFixture)
}

// handOn: get_pending_messages comes in on conn and hands the message.
func handOn(conn string) linkStep {
	return linkStep{"get_pending_messages on " + conn, func(f *linksFixture) {
		f.answer = f.request(conn)
		f.hand()
	}}
}

// hand begins get_pending_messages in f.answer and hands the message.
func (f *linksFixture) hand() {
	f.t.Helper()
	if err := f.ls.begin(context.Background(), f.answer, f.ses, pendingMessages); err != nil {
		f.t.Fatal(err)
	}
	msgs, _, err := f.store.Deliver(context.Background(), f.ses, 10)
	if err != nil || len(msgs) != 1 || msgs[0].Redelivered {
		f.t.Fatalf("the first delivery: %+v, %v; want the message, not marked", msgs, err)
	}
}

// writeAnswer writes the answer that handed the message: ok, or failing.
func writeAnswer(ok bool) linkStep {
	what := "its answer is written"
	if !ok {
		what = "writing its answer fails"
	}
	return linkStep{what, func(f *linksFixture) {
		if _, err := f.ls.write(f.answer, func() (int, error) {
			if !ok {
				return 3, errors.New("broken pipe")
			}
			return 42, nil
		}); (err == nil) != ok {
			f.t.Fatalf("write: %v", err)
		}
	}}
}

var (
	finishAnswer = linkStep{"its answer is out (finish)", func(f *linksFixture) { f.ls.finish(f.answer) }}
	loseAnswer   = linkStep{"its answer is lost (lose)", func(f *linksFixture) { f.ls.lose(f.answer) }}
)

// hangUp closes the connection named conn.
func hangUp(conn string) linkStep {
	return linkStep{conn + " closes", func(f *linksFixture) { f.ls.hangUp(f.conn(conn)) }}
}

// callOn: a call of the session comes in on conn, runs and is answered.
func callOn(conn string, kind callKind) linkStep {
	return linkStep{kind.tool + " on " + conn, func(f *linksFixture) { f.call(conn, kind) }}
}

// ackedOn: callOn, the call passing the ack of the answer that handed the
// message.
func ackedOn(conn string, kind callKind) linkStep {
	return linkStep{kind.tool + " with its ack on " + conn, func(f *linksFixture) {
		kind.ack = f.ls.ackOf(f.answer)
		if !validAck(kind.ack) {
			f.t.Fatalf("the answer carries the ack %q", kind.ack)
		}
		f.call(conn, kind)
	}}
}

// staleOn: callOn, the call passing an ack that is not its answer's.
func staleOn(conn string, kind callKind) linkStep {
	return linkStep{kind.tool + " with another ack on " + conn, func(f *linksFixture) {
		kind.ack = "0badc0de"
		f.call(conn, kind)
	}}
}

// call is a call of the session on conn, begun, written and out.
func (f *linksFixture) call(conn string, kind callKind) {
	l := f.request(conn)
	if err := f.ls.begin(context.Background(), l, f.ses, kind); err != nil {
		f.t.Fatal(err)
	}
	f.ls.write(l, func() (int, error) { return 42, nil })
	f.ls.finish(l)
}

// inProcess: a call of the session in process (no link header), whose
// answer is out when it returns; get_pending_messages hands the message.
func inProcess(kind callKind) linkStep {
	return linkStep{kind.tool + " in process", func(f *linksFixture) {
		ctx, l, end := f.ls.join(context.Background(), &mcp.CallToolRequest{})
		if kind.hands {
			f.answer = l
			f.hand()
		} else if err := f.ls.begin(ctx, l, f.ses, kind); err != nil {
			f.t.Fatal(err)
		}
		end()
	}}
}

// Where the message is: still held by the session, read, or taken back
// (it comes again, marked redelivered).
const (
	held      = "held"
	read      = "read"
	takenBack = "taken back"
)

// state says where the message is. It changes it: call it last.
func (f *linksFixture) state() string {
	f.t.Helper()
	ctx := context.Background()
	took, err := f.store.Unhand(ctx, f.ses.Agent, f.ses.ID)
	if err != nil {
		f.t.Fatal(err)
	}
	if took {
		return held
	}
	msgs, _, err := f.store.Deliver(ctx, f.ses, 10)
	switch {
	case err != nil:
		f.t.Fatal(err)
	case len(msgs) == 0:
		return read
	case len(msgs) == 1 && msgs[0].Redelivered:
		return takenBack
	}
	f.t.Fatalf("the message is neither held, read nor taken back: a delivery gives %+v", msgs)
	return ""
}

// TestLinksSettle: links' methods, in the order the transports and the
// gate call them, keep the rule of when what an answer hands a session
// counts as read: once the answer is out and a later call proves it was
// read; otherwise it is taken back, and comes again marked.
func TestLinksSettle(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []linkStep
		want  string
	}{
		{"handed, out, proved on its pipe: read",
			[]linkStep{handOn("pipe"), writeAnswer(true), finishAnswer, callOn("pipe", listTasks)}, read},
		{"handed, out, a later call on its HTTP connection proves nothing: held",
			[]linkStep{handOn("conn"), writeAnswer(true), finishAnswer, callOn("conn", listTasks)}, held},
		{"handed, out, a later reading call on its HTTP connection proves nothing: taken back",
			[]linkStep{handOn("conn"), writeAnswer(true), finishAnswer, callOn("conn", nextAction)}, takenBack},
		{"handed, out, proved by its ack on another HTTP connection: read",
			[]linkStep{handOn("conn"), writeAnswer(true), finishAnswer, ackedOn("conn2", listTasks)}, read},
		{"handed, out, proved by its ack on a reading call: read",
			[]linkStep{handOn("conn"), writeAnswer(true), finishAnswer, ackedOn("conn2", nextAction)}, read},
		{"handed, out, proved by its ack on another pipe: read",
			[]linkStep{handOn("pipe"), writeAnswer(true), finishAnswer, hangUp("pipe"), ackedOn("pipe2", nextAction)}, read},
		{"handed, out, another ack proves nothing: taken back",
			[]linkStep{handOn("conn"), writeAnswer(true), finishAnswer, staleOn("conn2", nextAction)}, takenBack},
		{"handed, out, another ack on its pipe: proved by the pipe",
			[]linkStep{handOn("pipe"), writeAnswer(true), finishAnswer, staleOn("pipe", nextAction)}, read},
		{"handed, writing its answer fails, its ack comes anyway: taken back",
			[]linkStep{handOn("conn"), writeAnswer(false), finishAnswer, ackedOn("conn2", nextAction)}, takenBack},
		{"handed, out in process, proved by the next call: read",
			[]linkStep{inProcess(pendingMessages), inProcess(listTasks)}, read},
		{"handed, out, not proved yet: held",
			[]linkStep{handOn("pipe"), writeAnswer(true), finishAnswer}, held},
		{"handed, out, a call that came before it was written proves nothing: held",
			[]linkStep{handOn("pipe"), callOn("pipe", listTasks), writeAnswer(true), finishAnswer}, held},
		{"handed, writing its answer fails: taken back",
			[]linkStep{handOn("pipe"), writeAnswer(false), finishAnswer}, takenBack},
		{"handed, its request ends with nothing written: taken back",
			[]linkStep{handOn("conn"), finishAnswer}, takenBack},
		{"handed, the call is cancelled: taken back",
			[]linkStep{handOn("conn"), loseAnswer}, takenBack},
		{"handed, the pipe closes before its answer is written: taken back on close",
			[]linkStep{handOn("pipe"), hangUp("pipe")}, takenBack},
		{"out, never proved, the pipe closes: held for a later call",
			[]linkStep{handOn("pipe"), writeAnswer(true), finishAnswer, hangUp("pipe")}, held},
		{"out, never proved, a reading call on another pipe: taken back",
			[]linkStep{handOn("pipe"), writeAnswer(true), finishAnswer, hangUp("pipe"), callOn("pipe2", nextAction)}, takenBack},
		{"out, never proved, a reading call on another HTTP connection: taken back",
			[]linkStep{handOn("conn"), writeAnswer(true), finishAnswer, callOn("conn2", nextAction)}, takenBack},
		{"out, never proved, a reading call on a connection of unknown order: taken back",
			[]linkStep{handOn("conn"), writeAnswer(true), finishAnswer, callOn("", nextAction)}, takenBack},
		{"out, never proved, a call that reads nothing leaves a chat batch: held",
			[]linkStep{handOn("conn"), writeAnswer(true), finishAnswer, callOn("conn2", listTasks)}, held},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newLinksFixture(t)
			var did []string
			for _, s := range tc.steps {
				s.do(f)
				did = append(did, s.what)
			}
			if got := f.state(); got != tc.want {
				t.Errorf("after %q the message is %s, want %s", did, got, tc.want)
			}
		})
	}
}

// TestLinksForgetAnswered: a pipe keeps a request only until its answer
// is out; a request that reuses an id in flight loses the first one's
// answer; a closed pipe keeps nothing more.
func TestLinksForgetAnswered(t *testing.T) {
	f := newLinksFixture(t)
	pipe := f.conn("pipe")
	id, late := rpcID(t, 7), rpcID(t, 8)
	first := f.ls.arrive(pipe, id)
	if f.ls.answering(pipe, id) != first {
		t.Fatal("the request in flight is not found by its id")
	}
	second := f.ls.arrive(pipe, id)
	if !first.isOut() || f.ls.answering(pipe, id) != second {
		t.Fatal("a request that reuses an id in flight does not replace the first one, lost")
	}
	f.ls.finish(second)
	if f.ls.answering(pipe, id) != nil {
		t.Fatal("an answered request is still in flight")
	}
	f.ls.hangUp(pipe)
	l := f.ls.arrive(pipe, late)
	if f.ls.answering(pipe, late) != nil {
		t.Fatal("a closed pipe keeps a request")
	}
	f.ls.lose(l)
}

// TestLinksBound: to a session that never proved an answer read, the
// batch it holds counts as read once UnackedBound of its answers in a row
// went out whole and no call proved one (rule 5): each of them hands the
// message, and the reading call after the last one finds nothing. An
// answer lost on its way does not count. A session that proved an answer
// read once is held to its proofs: its batch comes again, marked, however
// many answers go out unproven.
func TestLinksBound(t *testing.T) {
	for _, acked := range []bool{false, true} {
		t.Run(fmt.Sprintf("acked before %v", acked), func(t *testing.T) {
			f := newLinksFixture(t)
			ctx := context.Background()
			if acked {
				handOn("conn").do(f)
				writeAnswer(true).do(f)
				finishAnswer.do(f)
				ackedOn("conn2", nextAction).do(f)
				if _, err := f.store.Send(ctx, f.cfg(), fsstore.OutgoingMessage{From: "lead", To: "coder", Content: "hello"}); err != nil {
					t.Fatal(err)
				}
			}
			var got []int // how many messages each read handed
			for round := range UnackedBound + 3 {
				l := f.request("conn")
				if err := f.ls.begin(ctx, l, f.ses, pendingMessages); err != nil {
					t.Fatal(err)
				}
				msgs, _, err := f.store.Deliver(ctx, f.ses, 10)
				if err != nil {
					t.Fatal(err)
				}
				if len(msgs) > 0 && msgs[0].Redelivered != (round > 0) {
					t.Fatalf("read %d: redelivered %v", round, msgs[0].Redelivered)
				}
				got = append(got, len(msgs))
				lost := round == 1 // lost on its way: it does not count
				f.ls.write(l, func() (int, error) {
					if lost {
						return 3, errors.New("connection reset")
					}
					return 42, nil
				})
				f.ls.finish(l)
			}
			want := []int{1, 1, 1, 1, 1, 1}
			if !acked {
				want = []int{1, 1, 1, 1, 0, 0} // the lost one, then UnackedBound out whole
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("the reads handed %v messages, want %v", got, want)
			}
		})
	}
}

// cfg is the fixture project's config.
func (f *linksFixture) cfg() *fsstore.Config {
	cfg, err := f.store.LoadConfig()
	if err != nil {
		f.t.Fatal(err)
	}
	return cfg
}

// TestTakesAck: the tools whose schemas take an ack are the ones the gate
// reads it for (toolSpec.takesAck), and none else.
func TestTakesAck(t *testing.T) {
	for _, spec := range tools() {
		in, _ := servedSchemas(spec.tool.Name)
		if listed := gjson.GetBytes(in, "properties.ack").Exists(); listed != spec.takesAck {
			t.Errorf("%s: ack in its input schema %v, takesAck %v", spec.tool.Name, listed, spec.takesAck)
		}
	}
}
