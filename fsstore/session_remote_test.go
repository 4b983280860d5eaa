package fsstore

import "testing"

func TestSSHClient(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"192.0.2.7 51234 192.0.2.1 22", "192.0.2.7:51234"},
		{"2001:db8::7 51234 2001:db8::1 22", "[2001:db8::7]:51234"},
		{"::ffff:192.0.2.7 51234 ::1 22", "[::ffff:192.0.2.7]:51234"},
		{"", ""},
		{"192.0.2.7 51234 192.0.2.1", ""},          // three fields
		{"host.example 51234 192.0.2.1 22", ""},    // not an address
		{"192.0.2.7 port 192.0.2.1 22", ""},        // not a port
		{"192.0.2.7 70000 192.0.2.1 22", ""},       // out of range
		{"fe80::1%eth0 51234 fe80::2%eth0 22", ""}, // zoned: net.ParseIP refused it too
	} {
		if got := sshClient(tc.in); got != tc.want {
			t.Errorf("sshClient(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
