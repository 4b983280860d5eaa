package web

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
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
	// BlockedBy names the tasks a task waits for (ids or unique starts of
	// them); Change says what the depend action does with them.
	BlockedBy []string `json:"blockedBy"`
	Change    string   `json:"change"`
}

// act does one action as human by, through the same store calls as the
// CLI command of the same name, and returns the id of what it made.
type act func(ctx context.Context, store *fsstore.Store, cfg *fsstore.Config, by string, r request) (string, error)

// actions are the POST endpoints: a human sends or replies (aipm send),
// creates a task, with the tasks it waits for (aipm task add --after),
// changes what a task waits for (aipm task depend --on [--remove]: a
// cycle is refused, naming it), sets a task's status (aipm task status:
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
		after, err := resolveTasks(store, r.BlockedBy)
		if err != nil {
			return "", err
		}
		t, err := store.CreateTask(ctx, cfg, fsstore.NewTask{Title: r.Title, Description: r.Description, Priority: r.Priority, Assignee: r.Assignee, Requester: by, BlockedBy: after})
		return t.ID, err
	},
	"/api/tasks/depend": func(ctx context.Context, store *fsstore.Store, cfg *fsstore.Config, by string, r request) (string, error) {
		id, err := store.ResolveID(fsstore.Tasks, r.TaskID)
		if err != nil {
			return "", err
		}
		var held []string // a blocker to remove is taken as the task has it: one that names no task too, as doctor says
		if r.Change == changeRemove {
			t, _ := store.Task(id) // one that cannot be read: UpdateTask says why
			held = t.BlockedBy
		}
		ids, err := resolveTasks(store, r.BlockedBy, held...)
		if err != nil {
			return "", err
		}
		change, err := blockersChange(r.Change, ids)
		if err != nil {
			return "", err
		}
		t, err := store.UpdateTask(ctx, cfg, id, by, fsstore.TaskChange{Blockers: &change})
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

// resolveTasks resolves task ids, or unique starts of them, as the CLI's
// --after and --on do, an id of held taken as it is; none gives none. More
// than a task may wait for is refused before any look-up.
func resolveTasks(store *fsstore.Store, args []string, held ...string) ([]string, error) {
	if len(args) > fsstore.MaxBlockers {
		return nil, fsstore.CheckBlockerIDs("", args) // refuses the count
	}
	ids := make([]string, 0, len(args))
	for _, a := range args {
		if a = strings.TrimSpace(a); slices.Contains(held, a) {
			ids = append(ids, a)
			continue
		}
		id, err := store.ResolveID(fsstore.Tasks, a)
		if err != nil {
			return nil, fmt.Errorf("blockedBy: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// Changes of what a task waits for (the depend action's change): add the
// tasks named (the default, as aipm task depend), remove them (--remove),
// or set them all.
const (
	changeAdd    = "add"
	changeRemove = "remove"
	changeSet    = "set"
)

// blockersChange is the change of what a task waits for that the depend
// action asks: ids added or removed (at least one), or set as all it waits
// for (none: it waits for nothing).
func blockersChange(change string, ids []string) (fsstore.BlockersChange, error) {
	switch change {
	case "", changeAdd, changeRemove:
		if len(ids) == 0 {
			return fsstore.BlockersChange{}, invalid("name the tasks to wait for, or to stop waiting for, in blockedBy")
		}
		if change == changeRemove {
			return fsstore.BlockersChange{Remove: ids}, nil
		}
		return fsstore.BlockersChange{Add: ids}, nil
	case changeSet:
		return fsstore.BlockersChange{Set: &ids}, nil
	}
	return fsstore.BlockersChange{}, invalid(fmt.Sprintf("change %q is not one the board makes: use %s, %s or %s", fsstore.Clip(change, 40), changeAdd, changeRemove, changeSet))
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
			refuseErr(w, err)
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
