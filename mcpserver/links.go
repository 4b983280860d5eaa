package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"hash/fnv"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"aipm/fsstore"
)

// links are the HTTP requests in flight (aipm serve --http), by the id the
// handler put in linkHeader: a call's context ends when its request does,
// and a batch handed in an answer that never reached the client is taken
// back (DESIGN section 17: nothing is lost when the link drops).
//
// Over HTTP one session's calls may run at once, each in its own request,
// so a session's batch is carried by one request at a time: a call that
// may hand a batch claims the session first (waiting while another
// request carries one of its batches), and an acknowledgement (any call's
// first step, which reads what the session was handed) is skipped while
// one is carried. The request settles what it carried once it is over:
// the batch is read on the session's next call if its answer was written,
// or taken back. Over stdio there are no links (a nil *links): calls come
// one at a time and the session ends with its process.
type links struct {
	log      *slog.Logger
	mu       sync.Mutex
	m        map[string]*link // by the id in linkHeader
	carrying map[string]*link // by session id: the request whose answer carries its batch
	// stripes, by session id, order a claim and an acknowledgement of the
	// same session: the check and what it guards happen under one.
	stripes [64]sync.Mutex
}

func newLinks(log *slog.Logger) *links {
	return &links{log: log, m: map[string]*link{}, carrying: map[string]*link{}}
}

type link struct {
	ctx      context.Context // ends when the request ends (the client went away, or it was answered)
	cancel   context.CancelFunc
	w        *linkWriter
	released chan struct{} // closed once the request is over and what it carried is settled

	mu     sync.Mutex
	done   bool
	handed []handed // sessions a call of this request may have handed a batch
}

// handed is a session that may have been handed a batch, and how much of
// the answer was written by then.
type handed struct {
	ses  fsstore.Session
	mark int64
}

func (ls *links) add(parent context.Context, w *linkWriter) (string, *link) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	id := hex.EncodeToString(b[:])
	ctx, cancel := context.WithCancel(parent)
	l := &link{ctx: ctx, cancel: cancel, w: w, released: make(chan struct{})}
	ls.mu.Lock()
	ls.m[id] = l
	ls.mu.Unlock()
	return id, l
}

// finish ends the request id: calls still running in it are cancelled
// (their answer can no longer be part of it). It returns the sessions its
// calls may have handed a batch; settle must follow.
func (ls *links) finish(id string, l *link) []handed {
	ls.mu.Lock()
	delete(ls.m, id)
	ls.mu.Unlock()
	l.cancel()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done = true
	return l.handed
}

// settle releases the sessions l carried, once what it handed is read or
// taken back.
func (ls *links) settle(l *link) {
	ls.mu.Lock()
	for session, c := range ls.carrying {
		if c == l {
			delete(ls.carrying, session)
		}
	}
	ls.mu.Unlock()
	close(l.released)
}

func (ls *links) stripe(session string) *sync.Mutex {
	h := fnv.New32a()
	h.Write([]byte(session))
	return &ls.stripes[h.Sum32()%uint32(len(ls.stripes))]
}

// ifFree runs acknowledge unless a request in flight carries a batch of
// session (its answer is not out yet, so it is not read yet), and says
// whether it ran. Over stdio (ls nil) it always runs.
func (ls *links) ifFree(session string, acknowledge func()) bool {
	if ls == nil {
		acknowledge()
		return true
	}
	m := ls.stripe(session)
	m.Lock()
	defer m.Unlock()
	ls.mu.Lock()
	busy := ls.carrying[session] != nil
	ls.mu.Unlock()
	if !busy {
		acknowledge()
	}
	return !busy
}

// claim makes l the request that carries ses's batch, before a call that
// may hand one runs in it: it waits while another request carries one,
// until that request has settled. It fails only when ctx ends, or when l
// is over already (nobody would get the answer). Nothing over stdio.
func (ls *links) claim(ctx context.Context, l *link, ses fsstore.Session) error {
	if ls == nil || l == nil {
		return ctx.Err()
	}
	m := ls.stripe(ses.ID)
	for {
		m.Lock()
		ls.mu.Lock()
		other := ls.carrying[ses.ID]
		if other == nil || other == l {
			l.mu.Lock()
			done := l.done
			if !done {
				ls.carrying[ses.ID] = l
				l.handed = append(l.handed, handed{ses: ses, mark: l.w.written.Load()})
			}
			l.mu.Unlock()
			ls.mu.Unlock()
			m.Unlock()
			if done {
				return context.Canceled
			}
			return nil
		}
		ls.mu.Unlock()
		m.Unlock()
		ls.log.Debug("a batch of the session is on its way in another request: waiting for it", "session", ses.ID)
		select {
		case <-other.released:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// join is ctx ended also when the HTTP request call came in ends, and that
// request's link (nil over stdio, or nil with a ctx already ended when the
// request is over).
func (ls *links) join(ctx context.Context, call *mcp.CallToolRequest) (context.Context, *link, func()) {
	if ls == nil || call.Extra == nil || call.Extra.Header == nil {
		return ctx, nil, func() {}
	}
	id := call.Extra.Header.Get(linkHeader)
	ls.mu.Lock()
	l := ls.m[id]
	ls.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	if l == nil {
		cancel() // the request is over: nobody can get the answer
		return ctx, nil, cancel
	}
	stop := context.AfterFunc(l.ctx, cancel)
	return ctx, l, func() { stop(); cancel() }
}

// handedOver is the end of a call that claimed ses: if its request is
// over, or the call was cancelled, the answer will not reach the client
// and the batch is taken back now (else when the request ends:
// HTTP.ServeHTTP).
func (s *Server) handedOver(ctx context.Context, l *link, ses fsstore.Session) {
	if l == nil {
		return
	}
	l.mu.Lock()
	done := l.done
	l.mu.Unlock()
	if done || ctx.Err() != nil {
		unhand(ctx, s.store, s.log, ses)
	}
}
