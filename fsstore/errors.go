package fsstore

import "errors"

// ErrNotFound says a document or agent does not exist; callers branch on it
// with errors.Is.
var ErrNotFound = errors.New("not found")

// ErrExists says something that must be new already exists.
var ErrExists = errors.New("already exists")
