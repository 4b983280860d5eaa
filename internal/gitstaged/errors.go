package gitstaged

import "errors"

// ErrNoRepository says the project is not in a git work tree.
var ErrNoRepository = errors.New("not in a git repository")

// ErrForeignHook says a pre-commit hook is not a shell script, so aipm
// cannot add its line to it.
var ErrForeignHook = errors.New("the pre-commit hook is not a shell script")
