package web

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"aipm/fsstore"
)

// request is the JSON body of every action; each uses the fields it names.
type request struct {
	As          string   `json:"as"`
	To          string   `json:"to"`
	Content     string   `json:"content"`
	TaskID      string   `json:"taskId"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Assignee    string   `json:"assignee"`
	Priority    string   `json:"priority"`
	Status      string   `json:"status"`
	Reason      string   `json:"reason"`
	Approval    string   `json:"approval"`
	Paths       []string `json:"paths"`
	LeaseID     string   `json:"leaseId"`
}

// act does one action as human by, through the same store calls as the
// CLI command of the same name, and returns the id of what it made.
type act func(ctx context.Context, store *fsstore.Store, cfg *fsstore.Config, by string, r request) (string, error)

// actions are the POST endpoints: a human sends or replies (aipm send),
// creates a task (aipm task add), sets a task's status (aipm task status:
// blocked needs a reason, the assignee is interrupted), approves or
// rejects a requested task or change (aipm task approve|reject), breaks
// a lease (by its id, as the page shows it) or the leases on paths,
// telling each holder the reason (aipm leases break).
var actions = map[string]act{
	"/api/send": func(ctx context.Context, store *fsstore.Store, cfg *fsstore.Config, by string, r request) (string, error) {
		m, err := store.Send(ctx, cfg, fsstore.OutgoingMessage{From: by, To: r.To, Content: r.Content})
		return m.ID, err
	},
	"/api/tasks": func(ctx context.Context, store *fsstore.Store, cfg *fsstore.Config, by string, r request) (string, error) {
		t, err := store.CreateTask(ctx, cfg, fsstore.NewTask{Title: r.Title, Description: r.Description, Priority: r.Priority, Assignee: r.Assignee, Requester: by})
		return t.ID, err
	},
	"/api/tasks/status": func(ctx context.Context, store *fsstore.Store, cfg *fsstore.Config, by string, r request) (string, error) {
		if err := errors.Join(fsstore.CheckStatus(r.Status), fsstore.CheckStatusReason(r.Status, r.Reason)); err != nil {
			return "", err
		}
		id, err := store.ResolveID(fsstore.Tasks, r.TaskID)
		if err != nil {
			return "", err
		}
		t, err := store.UpdateTask(ctx, cfg, id, by, fsstore.TaskChange{Status: r.Status, Reason: r.Reason})
		return t.ID, err
	},
	"/api/tasks/decision": func(ctx context.Context, store *fsstore.Store, cfg *fsstore.Config, by string, r request) (string, error) {
		id, err := store.ResolveID(fsstore.Tasks, r.TaskID)
		if err != nil {
			return "", err
		}
		t, _, err := store.Decide(ctx, cfg, id, by, r.Approval, r.Reason)
		return t.ID, err
	},
	"/api/leases/break": func(ctx context.Context, store *fsstore.Store, _ *fsstore.Config, by string, r request) (string, error) {
		if r.LeaseID != "" { // the page breaks the lease it shows
			l, err := store.BreakLease(ctx, by, r.LeaseID, r.Reason)
			if l.ID != "" {
				err = nil // broken: see below
			}
			return l.ID, err
		}
		broken, err := store.BreakLeases(ctx, by, r.Paths, r.Reason)
		ids := make([]string, 0, len(broken))
		for _, l := range broken {
			ids = append(ids, l.ID)
		}
		if len(broken) > 0 {
			// They are broken: a holder the notification did not reach is
			// no failed break (the CLI warns of it; the page shows the
			// leases gone).
			err = nil
		}
		return strings.Join(ids, ","), err
	},
}

// maxBody bounds an action's JSON body.
const maxBody = 64 << 10

// action checks what every POST needs (the CSRF token the page carries, a
// JSON body, a human to act as) and runs a.
func (s *Server) action(a act) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("X-CSRF-Token")), []byte(s.csrf)) != 1 {
			refuse(w, http.StatusForbidden, "the request lacks the page's CSRF token: reload the page and try again")
			return
		}
		var req request
		dec := json.NewDecoder(io.LimitReader(r.Body, maxBody))
		dec.DisallowUnknownFields()
		err := dec.Decode(&req)
		if err == nil && dec.More() {
			err = errors.New("more than one JSON value")
		}
		if err != nil {
			refuse(w, http.StatusBadRequest, "the request is not the JSON this action takes ("+fsstore.Clip(err.Error(), 120)+")")
			return
		}
		cfg, err := s.store.LoadConfig()
		if err != nil {
			refuse(w, http.StatusConflict, "the project's config cannot be read: "+err.Error()+"; run aipm doctor")
			return
		}
		by, err := human(cfg, req.As)
		if err != nil {
			refuse(w, http.StatusBadRequest, err.Error())
			return
		}
		id, err := a(r.Context(), s.store, cfg, by, req)
		if err != nil {
			refuse(w, statusOf(err), fsstore.Clip(err.Error(), 500))
			return
		}
		s.states.rebuild(context.WithoutCancel(r.Context())) // the page sees its own action at once, even if the client left
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\"ok\":true,\"id\":%s}\n", strconv.Quote(id))
	}
}

// human is who acts: as, or the project's only human, and a human.
func human(cfg *fsstore.Config, as string) (string, error) {
	by, err := cfg.Actor(as)
	if err != nil {
		return "", err
	}
	if a, _ := cfg.Agent(by); a.Type != fsstore.AgentHuman {
		return "", fmt.Errorf("%q is an AI agent, not a human: act as one of the project's humans", by)
	}
	return by, nil
}

// statusOf is the HTTP status of a refused action: the request's fault
// (400) or the project's state refusing it (409).
func statusOf(err error) int {
	var ce *fsstore.CodeError
	if errors.As(err, &ce) && ce.Refusal() || errors.Is(err, fsstore.ErrInvalid) || errors.Is(err, fsstore.ErrAmbiguous) || errors.Is(err, fsstore.ErrNotFound) {
		return http.StatusBadRequest
	}
	return http.StatusConflict
}
