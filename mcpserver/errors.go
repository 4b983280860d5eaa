package mcpserver

import (
	"aipm/fsstore"
	"errors"
)

// ToolError is what a model reads when a tool fails: a code from the seeds,
// the fact, and the next call to make.
type ToolError struct {
	Code string
	Msg  string
}

func (e *ToolError) Error() string { return e.Code + ": " + e.Msg }

func toolErr(code, msg string) error { return &ToolError{Code: code, Msg: msg} }

// fromStore turns a store error into a tool error with a code.
func fromStore(err error, notFoundCode string) error {
	var te *ToolError
	var ce *fsstore.CodeError
	switch {
	case errors.As(err, &te):
		return err
	case errors.As(err, &ce):
		return toolErr(ce.Code, ce.Msg)
	case fsstore.IsDiskFull(err):
		return toolErr("disk_full", "the disk holding .ai-pm is full (or a file size limit was reached), so nothing was written: ask a human to free space, then call again; read-only tools still work")
	case errors.Is(err, fsstore.ErrNotFound):
		return toolErr(notFoundCode, err.Error())
	case errors.Is(err, fsstore.ErrExists):
		return toolErr("already_exists", err.Error())
	}
	return toolErr("invalid_request", err.Error())
}
