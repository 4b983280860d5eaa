package gitstaged

import (
	"errors"
	"testing"
)

// The hook's text with aipm's line: created, put after a shell script's
// first line, replaced when older, left as it is when there; a hook in
// another language refused.
func TestWithHookLine(t *testing.T) {
	line := "aipm leases check --staged --quiet || exit 1 " + hookMark
	for _, tc := range []struct {
		name, old, want string
		err             error
	}{
		{"none", "", "#!/bin/sh\n" + line + "\n", nil},
		{"shell", "#!/bin/sh\necho hi\n", "#!/bin/sh\n" + line + "\necho hi\n", nil},
		{"bash by env", "#!/usr/bin/env bash\nexit 0\n", "#!/usr/bin/env bash\n" + line + "\nexit 0\n", nil},
		{"no newline", "#!/bin/sh", "#!/bin/sh\n" + line + "\n", nil},
		{"there", "#!/bin/sh\n" + line + "\nmake lint\n", "#!/bin/sh\n" + line + "\nmake lint\n", nil},
		{"older", "#!/bin/sh\naipm leases check --staged " + hookMark + "\n", "#!/bin/sh\n" + line + "\n", nil},
		{"there, CRLF", "#!/bin/sh\r\n" + line + "\r\nmake lint\r\n", "#!/bin/sh\r\n" + line + "\r\nmake lint\r\n", nil},
		{"python", "#!/usr/bin/env python3\nprint(1)\n", "", ErrForeignHook},
		{"no shebang", "echo hi\n", "", ErrForeignHook},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := withHookLine(tc.old, line)
			if !errors.Is(err, tc.err) || got != tc.want {
				t.Errorf("withHookLine(%q) = %q, %v; want %q, %v", tc.old, got, err, tc.want, tc.err)
			}
		})
	}
}
