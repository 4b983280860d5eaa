package storage

import (
	"errors"
	"fmt"

	"aipm/internal/lockedfile"
)

// ErrNotFound says a document or agent does not exist; callers branch on it
// with errors.Is.
var ErrNotFound = errors.New("not found")

// ErrNoProject says that no directory from the working directory upwards
// holds .ai-pm/ (LocateProject given neither --dir nor AIPM_DIR).
var ErrNoProject = errors.New("no project")

// ErrExists says something that must be new already exists.
var ErrExists = errors.New("already exists")

// kindError is a complete sentence that errors.Is matches against a
// sentinel kind, without the kind's own text ("not found") appended to a
// message that already says it.
type kindError struct {
	msg  string
	kind error
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

// Kindf formats a message of the given kind (ErrNotFound, ErrExists, ...).
func Kindf(kind error, format string, args ...any) error {
	return &kindError{msg: fmt.Sprintf(format, args...), kind: kind}
}

// IsDiskFull reports whether err is a write refused for lack of space: a
// full disk, a quota, or a file size limit (RLIMIT_FSIZE).
func IsDiskFull(err error) bool {
	return lockedfile.IsNoRoom(err)
}

// CodeError is a refusal with a stable code (the seeds' error codes), so
// that the MCP tools and the CLI say the same thing.
type CodeError struct {
	Code string
	Msg  string
	Err  error // the cause, when there is one (errors.Is sees through)
}

func (e *CodeError) Error() string { return e.Msg }
func (e *CodeError) Unwrap() error { return e.Err }

// Refusal says the request itself was refused (a bad value, a missing
// argument, the project's state), rather than a right request failing to
// be written: no room on the disk, or a send delivered only in part.
func (e *CodeError) Refusal() bool { return e.Code != CodeDiskFull && e.Code != CodeSentPartly }

// CodeErr is the *CodeError of code with a message formatted as fmt.Sprintf.
func CodeErr(code, format string, args ...any) error {
	return &CodeError{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// The codes of CodeError: the seeds' error codes, one constant each, so
// that no code is compared as a string.
const (
	CodeAgentNotFound                    = "agent_not_found"
	CodeCannotConversationWithSelf       = "cannot_conversation_with_self"
	CodeCannotMessageSelf                = "cannot_message_self"
	CodeCannotStartConversationWithHuman = "cannot_start_conversation_with_human"
	CodeContentEmpty                     = "content_empty"
	codeContentInvalid                   = "content_invalid"
	CodeConversationAlreadyActive        = "conversation_already_active"
	CodeConversationAmbiguous            = "conversation_ambiguous"
	CodeConversationNotActive            = "conversation_not_active"
	CodeConversationNotFound             = "conversation_not_found"
	CodeDelegationNotFound               = "delegation_not_found"
	CodeDelegationNotOpen                = "delegation_not_open"
	CodeDelegationTargetMismatch         = "delegation_target_mismatch"
	CodeDiskFull                         = "disk_full"
	CodeDuplicateReceiver                = "duplicate_receiver"
	CodeGroupNotFound                    = "group_not_found"
	CodeInvalidMaxTurns                  = "invalid_max_turns"
	CodeInvalidResult                    = "invalid_result"
	CodeInvalidStatus                    = "invalid_status"
	CodeInvalidTransition                = "invalid_transition"
	CodeMarkerAlreadyUsed                = "marker_already_used"
	CodeMessageNotFound                  = "message_not_found"
	CodeMessageNotHanded                 = "message_not_handed"
	CodeMessageRequired                  = "message_required"
	CodeNoActiveConversation             = "no_active_conversation"
	CodeNotConversationParticipant       = "not_conversation_participant"
	CodeNotApprover                      = "not_approver"
	CodeNotDelegationOwner               = "not_delegation_owner"
	CodeNotTaskAssignee                  = "not_task_assignee"
	CodeNothingToChange                  = "nothing_to_change"
	CodeNotYourTurn                      = "not_your_turn"
	CodePurposeRequired                  = "purpose_required"
	CodeReasonRequired                   = "reason_required"
	CodeResultRequired                   = "result_required"
	CodeSentPartly                       = "sent_partly"
	CodeStoppedByHuman                   = "stopped_by_human"
	CodeTargetAgentNotInProject          = "target_agent_not_in_project"
	CodeTaskNotFound                     = "task_not_found"
	CodeTaskPendingApproval              = "task_pending_approval"
	CodeTaskNotAdjustable                = "task_not_adjustable"
	CodeTaskNotInProgress                = "task_not_in_progress"
	CodeTaskRequired                     = "task_required"
	CodeTooManyReceivers                 = "too_many_receivers"
	CodeTooManyTargets                   = "too_many_targets"
	CodeAutoStartRefused                 = "auto_start_refused"
	CodeDependencyCycle                  = "dependency_cycle"
	CodeTaskNotReady                     = "task_not_ready"
	CodeTaskTaken                        = "task_taken"
	CodeNothingToClaim                   = "nothing_to_claim"
)

// ErrBackoff says authenticate refused to check a passkey because of
// earlier failures; the error it wraps says until when.
var ErrBackoff = errors.New("too many failed authenticates")

// ErrNoChange is what an UpdateDoc function returns to leave the document
// as it was.
var ErrNoChange = errors.New("no change")

// ErrBadPasskey says a passkey does not match.
var ErrBadPasskey = errors.New("wrong passkey")

// ErrAmbiguous says a prefix matches more than one id (or a choice has more
// than one candidate).
var ErrAmbiguous = errors.New("ambiguous")

// ErrInvalid says a value has the wrong form.
var ErrInvalid = errors.New("invalid")

// ErrWatcherRunning says another watcher holds the project.
var ErrWatcherRunning = errors.New("another aipm watch is running")

// ErrNetworkFilesystem says .ai-pm/ (or the directory aipm init would put
// it in) is on a network filesystem, where aipm's rules cannot hold: flock
// is emulated there or only local to one client, O_APPEND is simulated by
// the client (two hosts' appends can overwrite each other), and inotify sees
// only this machine's writes, so the watcher and every waiting
// get_next_action go deaf to the other hosts. The CLI exits 1 on it.
var ErrNetworkFilesystem = errors.New("network filesystem")
