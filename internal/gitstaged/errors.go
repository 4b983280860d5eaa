package gitstaged

import "errors"

// ErrNoRepository says the project is not in a git work tree.
var ErrNoRepository = errors.New("not in a git repository")
