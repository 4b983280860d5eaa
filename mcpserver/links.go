package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// links keeps the one invariant of delivery (DESIGN section 4 rule 6,
// sections 14 and 17): what an answer hands a session counts as read only
// once the answer is out and a later call proves it was read; otherwise it
// is taken back, and comes again marked redelivered. It keeps it over
// every link: stdio (aipm serve, also through ssh), HTTP (aipm serve
// --http, also through a reverse proxy, pipelined, or a new connection per
// call) and an in-memory transport.
//
// links holds all the state of what is handed and not yet settled, and
// its methods are the only way to change it:
//   - each request in flight (link): the sessions its calls may have handed
//     something, how much of its answer is written and whether a write
//     failed, whether the answer is out, and the ack it carries;
//   - each ordered connection (linkConn): a stdio pipe (or the in-process
//     one), its requests not answered yet, whose answers are lost if it
//     closes;
//   - each session (carrying): the answer that carries what it holds, or
//     that it holds nothing, or only an interrupt shown; whether it ever
//     proved an answer read, and how many answers in a row it did not.
//
// The transports say when a request comes in (add, addWithin, arrive),
// when its answer is written (write, writeFailed), and when it is out
// (finish) or lost (lose, hangUp); the gate joins each call to its request
// (join) and begins it (begin). Nobody else keeps a piece of that state:
// the rest of the package points here.
//
// An answer may hand its session something to read: a batch of chat
// messages (get_pending_messages) or of notifications (get_notifications).
// The answer that shows an interrupt instead of a call's is carried the
// same way (Server.showInterrupt), whatever showing it hands. What an
// answer hands stays pending in the agent's read.json (the stream cursor's
// Pending batch) until a later call of the session settles it:
//
//  1. One answer at a time carries a session's batch: a call that may hand
//     one makes its answer the session's carrier (begin). While the
//     carrier is on its way, a call of the session that may hand, that
//     reads what is unread (rule 4), or that came in after the answer began
//     to be written, waits for it; any other call runs and settles nothing
//     (it may have been sent before that answer was read).
//  2. The answer is out once its link wrote it whole (its last byte went to
//     the pipe or the TCP connection) or lost it (a write failed, the call
//     was cancelled, its request ended first, the pipe closed). What a lost
//     answer handed is taken back at once (finish, lose).
//  3. A later call that proves the answer was read commits what it handed
//     (read means received). The proofs:
//     - on any link: the call passes, as its ack argument, the ack the
//     answer carried (ackOf: a few random bytes, made when a call first
//     hands something in it; the answer says to pass it, and the tools a
//     session calls next take it: toolSpec.takesAck). No client can send
//     it before it read the answer, whatever lies between: a reverse proxy
//     that pools its upstream connections, pipelined requests, a new
//     connection per call. An ack of another answer (an older one, another
//     session's) proves nothing; one not of the shape aipm gives is
//     refused (ackArgument).
//     - stdio: the call's request was read from stdin after the answer
//     began to be written to stdout (and it settles once the answer is
//     written whole). A pipe keeps order, and what was written to it stays
//     readable after aipm serve dies. Through ssh the pipe ends at sshd: a
//     call the client sent before it read the answer, in parallel, could
//     count an answer the network then lost; one call at a time is safe.
//     - in process (an in-memory transport, which loses nothing): the call
//     began after the answer was returned.
//     - on any link: mark_read naming a message of the batch
//     (fsstore.Store.MarkRead).
//     Over HTTP a connection's order proves nothing: a proxy sends the next
//     client's request on the connection the answer went out on, and a
//     client may pipeline its next request before it reads the answer.
//  4. A later call that proves nothing takes back what the session holds,
//     so that it comes again, marked redelivered, when the call reads what
//     is unread: it may hand the session something itself, or it is
//     get_next_action (toolSpec.readsUnread). Any call takes back a batch
//     of notifications, which may hold an interrupt that must then replace
//     the call. Other calls leave a chat batch pending, for a later call to
//     prove or take back.
//  5. A session that never proved an answer read (a script that ignores
//     acks, over HTTP) would otherwise get the same batch for ever, and
//     get_next_action would never wait: once UnackedBound of its answers in
//     a row went out whole (an answer lost on its way does not count) and
//     no call proved one, the call after the last commits what it holds, as
//     a proof would. Every message reaches such a client in a bounded
//     number of calls, repeats marked; it loses one only if it reads none
//     of UnackedBound answers it asked for. Once a session proved one
//     answer read, only proofs count for it.
//
// An interrupt shown whole (in an answer that replaced a call's, or by a
// client hook) is read only by a call, proven as above, that lets the
// session comply with it (fsstore.Store.AcknowledgeCall and
// AcknowledgeShown). A session that dies leaves what it holds pending,
// and the next session gets it again, marked (fsstore). So nothing is read
// unseen, and a repeat comes only after a link could not prove an answer
// was read, always marked.
type links struct {
	store *fsstore.Store
	log   *slog.Logger
	seq   atomic.Uint64 // orders requests in and answers out, over every connection
	local *linkConn     // the connection of the calls that came with no link (in process)

	mu       sync.Mutex
	requests map[string]*link     // in flight, by the id in linkHeader
	sessions map[string]*carrying // by session id
}

func newLinks(store *fsstore.Store, log *slog.Logger) *links {
	return &links{store: store, log: log, local: &linkConn{}, requests: map[string]*link{}, sessions: map[string]*carrying{}}
}

// linkConn is a connection whose requests and answers follow each other in
// order, one link after the other, and whose order proves an answer read
// (rule 3): a stdio pipe or the in-process one. Only links changes it.
type linkConn struct {
	mu     sync.Mutex
	calls  map[jsonrpc.ID]*link // requests not answered yet, by JSON-RPC id (stdio: arrive)
	closed bool                 // hung up: its answers will not be written (hangUp)
}

// link is one request: a JSON-RPC request over stdio, an HTTP request, or
// a call in process. Its answer is out once (finish, lose). Only links
// changes it.
type link struct {
	id      string
	conn    *linkConn // nil: on no ordered connection (HTTP), whose order proves nothing
	arrived uint64    // links.seq when it came in
	// ctx ends with the HTTP request (nil over stdio and in process): a
	// call's context ends with it.
	ctx    context.Context
	cancel context.CancelFunc
	out    chan struct{} // closed once the answer is out and what it lost is taken back
	key    *jsonrpc.ID   // its key in conn.calls (arrive), under conn.mu

	mu      sync.Mutex
	over    bool // the answer is out: nothing more may be handed in it
	outAt   uint64
	written int64    // bytes of the answer written (write)
	failed  bool     // a write of the answer failed (write, writeFailed)
	handed  []handed // the sessions its calls may have handed something
	// ack is the acknowledgement the answer carries once a call hands a
	// session something in it (hand): a later call that passes it proves
	// the client read the answer (rule 3).
	ack string
}

// handed is a session an answer may have handed something, and whether
// the answer went out whole after that.
type handed struct {
	ses  fsstore.Session
	mark int64 // how much of the answer was written when the call began to hand
	ok   bool  // set when the answer is out
}

// carrying is what this process knows of one session's deliveries. Only
// links changes it.
type carrying struct {
	mu sync.Mutex // orders the settling and carrying of the session's calls
	// carrier is the answer that may have handed the session what it holds,
	// until a later call settles it.
	carrier *link
	// clear: the session holds nothing, as far as this process knows, so a
	// call need not read read.json. A session's first call in this process
	// always looks.
	clear bool
	// shown: the session holds only an interrupt shown whole (kept by
	// AcknowledgeCall), which only a call that complies reads.
	shown bool
	// acked: a call of the session proved an answer read (rule 3): its
	// client acknowledges, so the bound of rule 5 is not for it.
	acked bool
	// unproven counts the answers in a row that went out whole, handed the
	// session something and that no call proved (rule 5); counted is the
	// last one counted, so that none counts twice.
	unproven int
	counted  *link
}

// callKind is what begin needs to know of a call of a session: what it
// does with what the session holds (from its toolSpec).
type callKind struct {
	tool string
	// hands: the call's answer may hand the session something
	// (toolSpec.handsBatch, or the answer that shows an interrupt).
	hands bool
	// reads: the call reads what is unread (toolSpec.readsUnread).
	reads bool
	// readStreams are the streams the call's own read commits
	// (toolSpec.readStreams).
	readStreams []string
	// complies: the call lets the session comply with an interrupt, so it
	// reads one only shown (toolSpec.passesInterrupt).
	complies bool
	// ack is the acknowledgement the call carries, if any (its ack
	// argument): the proof that its client read the answer that carried it.
	ack string
}

func (ls *links) carrying(session string) *carrying {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	c := ls.sessions[session]
	if c == nil {
		c = &carrying{}
		ls.sessions[session] = c
	}
	return c
}

// add registers a request that came in on conn (nil: an order nobody
// knows), with no context of its own (stdio). Its id travels to the gate
// in linkHeader.
func (ls *links) add(conn *linkConn) *link { return ls.register(ls.newLink(conn)) }

// addWithin is add for an HTTP request, whose context is parent: the
// link's context ends with it. It is on no ordered connection: over HTTP a
// connection's order proves nothing (rule 3).
func (ls *links) addWithin(parent context.Context) *link {
	l := ls.newLink(nil)
	l.ctx, l.cancel = context.WithCancel(parent)
	return ls.register(l)
}

// newLink is a request on conn, not registered yet.
func (ls *links) newLink(conn *linkConn) *link {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return &link{id: hex.EncodeToString(b[:]), conn: conn, arrived: ls.seq.Add(1), out: make(chan struct{})}
}

// register makes l findable by its id.
func (ls *links) register(l *link) *link {
	ls.mu.Lock()
	ls.requests[l.id] = l
	ls.mu.Unlock()
	return l
}

// arrive registers a tools/call request read from conn with JSON-RPC id
// (stdio), so that its response finds it (answering). A request still in
// flight with the same id is lost: a client that reused an id in flight
// cannot tell the two answers apart. Once conn hung up, the request is not
// kept in it.
func (ls *links) arrive(conn *linkConn, id jsonrpc.ID) *link {
	l := ls.add(conn)
	conn.mu.Lock()
	old := conn.calls[id]
	if !conn.closed {
		if conn.calls == nil {
			conn.calls = map[jsonrpc.ID]*link{}
		}
		conn.calls[id] = l
		l.key = &id
	}
	conn.mu.Unlock()
	if old != nil {
		ls.lose(old)
	}
	return l
}

// answering is the request on conn that the response with JSON-RPC id
// answers, if it is in flight (arrive).
func (ls *links) answering(conn *linkConn, id jsonrpc.ID) *link {
	conn.mu.Lock()
	defer conn.mu.Unlock()
	return conn.calls[id]
}

// hangUp says conn closed: the answers of its requests in flight will not
// be written (lose), and no request is kept in it from now on.
func (ls *links) hangUp(conn *linkConn) {
	conn.mu.Lock()
	calls := conn.calls
	conn.calls, conn.closed = nil, true
	conn.mu.Unlock()
	for _, l := range calls {
		ls.lose(l)
	}
}

// write writes part of l's answer with w, a write to the pipe or the HTTP
// response, and records how much went out and whether it failed. An answer
// that hands something begins to go out when its first write begins: a
// request that comes in from then on came after it (rule 3), even before
// the write returns, and waits for finish (begin); no call settles
// anything before finish, so none acknowledges an answer still being
// written.
func (ls *links) write(l *link, w func() (int, error)) (int, error) {
	l.mu.Lock()
	if l.outAt == 0 && len(l.handed) > 0 {
		l.outAt = ls.seq.Add(1)
	}
	l.mu.Unlock()
	n, err := w()
	l.mu.Lock()
	l.written += int64(n)
	l.failed = l.failed || err != nil
	l.mu.Unlock()
	return n, err
}

// writeFailed records that l's answer could not all be sent (a flush of
// the HTTP response failed).
func (ls *links) writeFailed(l *link) {
	l.mu.Lock()
	l.failed = true
	l.mu.Unlock()
}

// finish says l's answer is out, as written (write): what a call of l
// handed a session went out whole when no write failed and some of the
// answer was written after it was handed (over HTTP, the client's TCP
// stack, or a proxy's, has it; whether the client read it, only its ack
// tells: rule 3. The request's context says nothing here: a client's ends
// as soon as it has read the answer). What it did not hand
// out whole is taken back now, before any call of that session goes on.
// Only the first of finish and lose counts.
func (ls *links) finish(l *link) {
	ls.end(l, func(h handed) bool { return !l.failed && l.written > h.mark })
}

// lose says l's answer will not go out (a cancelled call, a request that
// ended first, a closed pipe): what its calls handed is taken back now.
func (ls *links) lose(l *link) {
	ls.end(l, func(handed) bool { return false })
}

// end ends l: whole says, for each session one of its calls may have
// handed something, whether the answer went out whole after that (called
// under l.mu). What a lost answer handed is taken back now, before any
// call of that session goes on. Calls still running in l are cancelled
// (their answer can no longer be part of it). Only the first end counts.
func (ls *links) end(l *link, whole func(handed) bool) {
	ls.mu.Lock()
	delete(ls.requests, l.id)
	ls.mu.Unlock()
	if l.cancel != nil {
		l.cancel()
	}
	l.mu.Lock()
	if l.over {
		l.mu.Unlock()
		return
	}
	l.over = true
	if l.outAt == 0 {
		l.outAt = ls.seq.Add(1)
	}
	var lost []fsstore.Session
	for i := range l.handed {
		l.handed[i].ok = whole(l.handed[i])
		if !l.handed[i].ok {
			lost = append(lost, l.handed[i].ses)
		}
	}
	l.mu.Unlock()
	for _, ses := range lost {
		c := ls.carrying(ses.ID)
		c.mu.Lock()
		if _, ok := ls.takeBack(context.Background(), ses, "the client never got the answer (the link went away mid-call)"); ok && c.carrier == l {
			c.carrier, c.clear = nil, true
		}
		c.mu.Unlock()
	}
	if conn := l.conn; conn != nil {
		conn.mu.Lock()
		if l.key != nil && conn.calls[*l.key] == l {
			delete(conn.calls, *l.key)
		}
		conn.mu.Unlock()
	}
	close(l.out)
}

// handsAny says whether a call of l may have handed a session something.
func (ls *links) handsAny(l *link) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.handed) > 0
}

// isOut says whether l's answer is out and settled by end.
func (l *link) isOut() bool {
	select {
	case <-l.out:
		return true
	default:
		return false
	}
}

// before says whether l's answer began to go out before call came in: the
// call may be the one that proves it, and waits for it to be out.
func (l *link) before(call *link) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.outAt != 0 && call.arrived > l.outAt
}

// proves says whether call (a later call of ses, carrying ack) proves that
// l's answer was read: rule 3.
func (l *link) proves(call *link, ses fsstore.Session, ack string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.over || call == nil {
		return false
	}
	if ack != "" && ack == l.ack {
		return true // the client passed on what it read in the answer
	}
	if l.conn == nil || call.conn != l.conn || call.arrived < l.outAt {
		return false
	}
	for _, h := range l.handed {
		if h.ses.ID == ses.ID && !h.ok {
			return false
		}
	}
	return true
}

// wentWhole says whether l's answer is out and went out whole after a
// call of it handed ses something.
func (l *link) wentWhole(ses fsstore.Session) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.over && slices.ContainsFunc(l.handed, func(h handed) bool { return h.ses.ID == ses.ID && h.ok })
}

// hand records that a call of l may hand ses something, and makes the
// acknowledgement l's answer carries (ackOf); false when l's answer is out
// already (nobody would get it).
func (ls *links) hand(l *link, ses fsstore.Session) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.over {
		return false
	}
	if l.ack == "" {
		var b [ackBytes]byte
		if _, err := rand.Read(b[:]); err != nil {
			panic(err) // crypto/rand does not fail on Linux
		}
		l.ack = hex.EncodeToString(b[:])
	}
	l.handed = append(l.handed, handed{ses: ses, mark: l.written})
	return true
}

// handedNothing says that the call of l that was to hand ses something
// handed nothing after all (the interrupt it shows was held already): l
// does not carry the session's batch, and losing it takes nothing back.
func (ls *links) handedNothing(l *link, ses fsstore.Session) {
	c := ls.carrying(ses.ID)
	c.mu.Lock()
	defer c.mu.Unlock()
	l.mu.Lock()
	l.handed = slices.DeleteFunc(l.handed, func(h handed) bool { return h.ses.ID == ses.ID })
	l.mu.Unlock()
	if c.carrier == l {
		c.carrier = nil
	}
}

// ackOf is the acknowledgement l's answer carries: what a later call
// passes as its ack to prove the client read it (rule 3); "" if no call
// of l handed anything.
func (ls *links) ackOf(l *link) string {
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ack
}

// ackBytes is how many random bytes an acknowledgement holds (written in
// hex): short for a model to copy, and no client can pass it before it
// read the answer that carries it.
const ackBytes = 4

// validAck says whether ack has the shape of an acknowledgement aipm
// gives (ackOf): ackBytes bytes in lower-case hex.
func validAck(ack string) bool {
	if len(ack) != 2*ackBytes {
		return false
	}
	_, err := hex.DecodeString(ack)
	return err == nil && strings.ToLower(ack) == ack
}

// UnackedBound is rule 5's bound: to a session that never proved an
// answer read, the batch it holds counts as read once UnackedBound of its
// answers in a row went out whole and no call proved one.
const UnackedBound = 3

// begin is the first step of a call of session ses in link l: it waits
// while another answer of the session is on its way, settles what the
// session holds (rules 3 and 4), and, for a call whose answer may hand the
// session something (call.hands), makes that answer the session's
// carrier. It fails only when ctx ends, or when l's answer is out already
// and the call would hand something.
func (ls *links) begin(ctx context.Context, l *link, ses fsstore.Session, call callKind) error {
	c := ls.carrying(ses.ID)
	for {
		c.mu.Lock()
		other := c.carrier
		if other == nil || other == l || other.isOut() {
			break
		}
		if !call.hands && !call.reads && !other.before(l) {
			c.mu.Unlock()
			return nil // it may have been sent before that answer was read: it runs
		}
		c.mu.Unlock()
		ls.log.Debug("an answer that may hand the session a batch is on its way: waiting for it", "session", ses.ID, "tool", call.tool)
		select {
		case <-other.out:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	defer c.mu.Unlock()
	if c.carrier != l {
		ls.settle(ctx, c, l, ses, call)
	}
	if call.hands {
		if !ls.hand(l, ses) {
			return context.Canceled
		}
		c.carrier, c.clear = l, false
	}
	return nil
}

// settle applies rules 3 to 5 for call l of ses, under c.mu.
func (ls *links) settle(ctx context.Context, c *carrying, l *link, ses fsstore.Session, call callKind) {
	carrier := c.carrier
	if carrier == nil && call.complies {
		// An interrupt a client hook showed whole (no answer of this
		// process carried it), or one an answer proven read showed: the
		// call that complies with it reads it (get_notifications in its own
		// read, which lists it again).
		if err := ls.store.AcknowledgeShown(ctx, ses.Agent, ses.ID, call.tool, call.readStreams...); err != nil {
			ls.log.Error("acknowledge an interrupt shown", "agent", ses.Agent, "session", ses.ID, "err", err)
		}
		c.shown = false
	}
	switch {
	case carrier == nil && (c.clear || c.shown):
		// Nothing held, as far as this process knows; or only an interrupt
		// shown, which stays until a call complies.
	case carrier != nil && carrier.proves(l, ses, call.ack):
		c.acked = true
		ls.commit(ctx, c, ses, call, call.tool)
	case carrier != nil && c.pastBound(carrier, ses):
		ls.log.Info("its batch counts as read: the session never acknowledges an answer, and its answers went out whole "+strconv.Itoa(UnackedBound)+" times in a row", "session", ses.ID)
		ls.commit(ctx, c, ses, call, call.tool+" (unacknowledged)")
	case call.hands || call.reads:
		took, ok := ls.takeBack(ctx, ses, "the call cannot prove its answer was read")
		if ok {
			c.carrier, c.clear, c.shown = nil, true, false
		}
		if ok && !took {
			c.unproven = 0 // it held nothing: no batch went out again
		}
	default:
		ls.takeBack(ctx, ses, "the call cannot prove its answer was read", fsstore.NotificationStream(ses.Purpose))
	}
}

// commit commits what ses holds for call (rules 3 and 5), under c.mu; via
// names it in the read receipt. The call's own read commits readStreams in
// its own write; an interrupt only shown stays held until a call complies.
func (ls *links) commit(ctx context.Context, c *carrying, ses fsstore.Session, call callKind, via string) {
	kept, err := ls.store.AcknowledgeCall(ctx, ses.Agent, ses.ID, via, call.complies, call.readStreams...)
	if err != nil {
		ls.log.Error("acknowledge", "agent", ses.Agent, "session", ses.ID, "err", err)
		return
	}
	c.carrier, c.clear, c.shown = nil, !kept, kept
	c.unproven, c.counted = 0, nil
}

// pastBound counts carrier, once, among the session's answers in a row
// that went out whole and that no call proved, and says whether that makes
// UnackedBound of them for a session that never acknowledged (rule 5).
func (c *carrying) pastBound(carrier *link, ses fsstore.Session) bool {
	if c.counted != carrier && carrier.wentWhole(ses) {
		c.unproven++
		c.counted = carrier
	}
	return !c.acked && c.unproven >= UnackedBound
}

// takeBack takes back what ses holds in streams (none named: all of them),
// saying why in the log when there was something; it says whether there
// was, and whether that worked.
func (ls *links) takeBack(ctx context.Context, ses fsstore.Session, why string, streams ...string) (took, ok bool) {
	took, err := ls.store.Unhand(context.WithoutCancel(ctx), ses.Agent, ses.ID, streams...)
	switch {
	case err != nil:
		ls.log.Error("take back a batch whose answer was not proven read", "session", ses.ID, "err", err)
		return false, false
	case took:
		ls.log.Info("its batch comes again, marked redelivered: "+why, "session", ses.ID, "streams", streams)
	}
	return took, true
}

// join is the link of call, and ctx ended also when that link's request
// ends (HTTP); end must run when the call returns. A call that came with no
// link (an in-memory transport) gets one on the in-process connection,
// whose answer is out when the call returns, whole unless ctx ended. A call
// whose request is over already gets an ended ctx.
func (ls *links) join(ctx context.Context, call *mcp.CallToolRequest) (_ context.Context, _ *link, end func()) {
	var id string
	if call.Extra != nil && call.Extra.Header != nil {
		id = call.Extra.Header.Get(linkHeader)
	}
	if id == "" {
		l := &link{conn: ls.local, arrived: ls.seq.Add(1), out: make(chan struct{})}
		return ctx, l, func() { ls.end(l, func(handed) bool { return ctx.Err() == nil }) }
	}
	ls.mu.Lock()
	l := ls.requests[id]
	ls.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	if l == nil {
		cancel() // the request is over: nobody can get the answer
		return ctx, nil, cancel
	}
	stop := func() bool { return false }
	if l.ctx != nil {
		stop = context.AfterFunc(l.ctx, cancel)
	}
	return ctx, l, func() {
		if ctx.Err() != nil {
			// No answer goes out for a cancelled call (the SDK sends none),
			// nor in a request that is over.
			ls.lose(l)
		}
		stop()
		cancel()
	}
}
