package fsstore

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// envSSHConnection is what sshd sets in a session's environment: "client
// address, client port, server address, server port".
const envSSHConnection = "SSH_CONNECTION"

// sshClient is the client's host:port in an SSH_CONNECTION value, or ""
// when v is not one (not started under sshd).
func sshClient(v string) string {
	// netip, not net: aipm-hook links this package and starts sooner
	// without the net package's initialisation.
	f := strings.Fields(v)
	if len(f) != 4 {
		return ""
	}
	addr, err := netip.ParseAddr(f[0])
	port, perr := strconv.ParseUint(f[1], 10, 16)
	if err != nil || perr != nil || addr.Zone() != "" {
		return ""
	}
	return netip.AddrPortFrom(addr, uint16(port)).String()
}

// ServeMany says this process serves the sessions of many agents and
// clients (aipm serve --http): the sessions it opens take no run id and no
// ssh client from its environment, which speaks for none of them.
func (s *Store) ServeMany() { s.files.ServesMany.Store(true) }

// SavedCredential is agent's credential as saved on this machine
// (CredentialPath, written by aipm agent passkey ID --save): what
// aipm serve --agent holds, so that a remote client's entry carries no
// secret. The file is checked as AIPM_PASSKEY_FILE is (0600, not empty).
func (s *Store) SavedCredential(agent string) (*Credential, error) {
	path, err := s.files.CredentialPath(agent)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s has no saved passkey on this machine (%s): save one with aipm agent passkey %s --save", agent, s.files.Rel(path), agent)
	}
	return CredentialFromEnv(func(k string) string {
		switch k {
		case EnvAgentID:
			return agent
		case EnvPasskeyFile:
			return path
		}
		return ""
	})
}
