// Package sshtest runs a loopback sshd for tests and for aipm-bench (row
// P10): two host names, "home" and "hostB", both 127.0.0.1 on a free
// port, reached with keys it generates. Nothing of the machine's own ssh
// setup is read or changed: host key, client key, authorized_keys,
// sshd_config and the client's ssh config all live in the directory given
// to Start.
package sshtest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Sshd is the server program Start runs.
const Sshd = "/usr/sbin/sshd"

// Hosts are the host names the client config defines.
var Hosts = []string{"home", "hostB"}

// Missing names what this machine lacks to start a server ("" when
// nothing): what a test skips for (testenv.SkipMissing).
func Missing() string {
	var gone []string
	if _, err := os.Stat(Sshd); err != nil {
		gone = append(gone, Sshd+" (apt-get install openssh-server)")
	}
	for _, prog := range []string{"ssh", "ssh-keygen"} {
		if _, err := exec.LookPath(prog); err != nil {
			gone = append(gone, prog+" (apt-get install openssh-client)")
		}
	}
	if len(gone) == 0 {
		return ""
	}
	return strings.Join(gone, ", ")
}

// Server is a running loopback sshd.
type Server struct {
	// Dir holds the keys and configs.
	Dir string
	// Config is the client's ssh config: ssh -F Config home CMD.
	Config string
	// Port is the port sshd listens on, at 127.0.0.1.
	Port int

	cmd  *exec.Cmd
	done chan struct{}
	log  *lockedBuffer
	once sync.Once
}

// Start generates keys into dir (made if missing; it should be a fresh
// temporary directory), writes the configs and starts sshd on a free
// loopback port, and returns once it accepts connections. env holds
// "KEY=VALUE" pairs every session gets (sshd's SetEnv); without a PATH
// among them, sessions get this process's PATH, so that the programs a
// test puts there (aipm) resolve the same way remotely. It gives up after
// 20 seconds or when ctx ends.
func Start(ctx context.Context, dir string, env ...string) (*Server, error) {
	if why := Missing(); why != "" {
		return nil, fmt.Errorf("%w: no %s", ErrMissing, why)
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("sshtest: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("sshtest: %w", err)
	}
	if err := keys(ctx, dir); err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 {
		// sshd's privilege separation directory, as the Debian package's
		// service makes it.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			return nil, fmt.Errorf("sshtest: %w", err)
		}
	}
	var last error
	for range 5 { // a free port may be taken between the probe and sshd's bind
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s, err := start(ctx, dir, port, env)
		if err == nil {
			return s, nil
		}
		last = err
		if ctx.Err() != nil || !strings.Contains(err.Error(), "already in use") {
			break
		}
	}
	return nil, last
}

// keys makes the host key, the client key and authorized_keys in dir.
func keys(ctx context.Context, dir string) error {
	for _, name := range []string{"host_key", "client_key"} {
		path := filepath.Join(dir, name)
		os.Remove(path)
		os.Remove(path + ".pub")
		out, err := exec.CommandContext(ctx, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "sshtest", "-f", path).CombinedOutput()
		if err != nil {
			return fmt.Errorf("sshtest: ssh-keygen %s: %v: %s", name, err, bytes.TrimSpace(out))
		}
	}
	pub, err := os.ReadFile(filepath.Join(dir, "client_key.pub"))
	if err != nil {
		return fmt.Errorf("sshtest: %w", err)
	}
	return writeFile(filepath.Join(dir, "authorized_keys"), string(pub))
}

func writeFile(path, text string) error {
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		return fmt.Errorf("sshtest: %w", err)
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("sshtest: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// serverConfig is sshd_config for port.
func serverConfig(dir string, port int, env []string, penalties bool) string {
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("ListenAddress 127.0.0.1:%d", port)
	line("HostKey %s", filepath.Join(dir, "host_key"))
	line("AuthorizedKeysFile %s", filepath.Join(dir, "authorized_keys"))
	line("PidFile %s", filepath.Join(dir, "sshd.pid"))
	line("StrictModes no")
	line("UsePAM no")
	line("PubkeyAuthentication yes")
	line("PasswordAuthentication no")
	line("KbdInteractiveAuthentication no")
	if os.Geteuid() == 0 {
		line("PermitRootLogin prohibit-password")
	}
	line("UseDNS no")
	line("PrintMotd no")
	line("PrintLastLog no")
	line("X11Forwarding no")
	line("MaxStartups 200")
	line("MaxSessions 200")
	line("LogLevel ERROR")
	if !penalties {
		// OpenSSH 9.8 and later refuse a source whose connections keep
		// dying: the link-cut tests kill clients on purpose.
		line("PerSourcePenalties no")
	}
	hasPath := false
	for _, kv := range env {
		hasPath = hasPath || strings.HasPrefix(kv, "PATH=")
	}
	if !hasPath {
		env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	}
	// sshd takes the first SetEnv line only: all of them on one.
	quoted := make([]string, len(env))
	for i, kv := range env {
		quoted[i] = strconv.Quote(kv)
	}
	line("SetEnv %s", strings.Join(quoted, " "))
	return b.String()
}

// clientConfig is the ssh config for the hosts on port.
func clientConfig(dir string, port int) (string, error) {
	u, err := user.Current()
	if err != nil {
		return "", fmt.Errorf("sshtest: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Host %s\n", strings.Join(Hosts, " "))
	for _, kv := range [][2]string{
		{"HostName", "127.0.0.1"},
		{"Port", strconv.Itoa(port)},
		{"User", u.Username},
		{"IdentityFile", filepath.Join(dir, "client_key")},
		{"IdentitiesOnly", "yes"},
		{"BatchMode", "yes"},
		{"StrictHostKeyChecking", "no"},
		{"UserKnownHostsFile", "/dev/null"},
		{"LogLevel", "ERROR"},
		{"ServerAliveInterval", "5"},
		{"ServerAliveCountMax", "3"},
	} {
		fmt.Fprintf(&b, "  %s %s\n", kv[0], kv[1])
	}
	return b.String(), nil
}

// start writes the configs for port and runs sshd until it accepts.
func start(ctx context.Context, dir string, port int, env []string) (*Server, error) {
	cfg := filepath.Join(dir, "sshd_config")
	penalties := true
	if err := writeFile(cfg, serverConfig(dir, port, env, false)); err != nil {
		return nil, err
	}
	if out, err := exec.CommandContext(ctx, Sshd, "-t", "-f", cfg).CombinedOutput(); err != nil {
		if !bytes.Contains(out, []byte("PerSourcePenalties")) {
			return nil, fmt.Errorf("sshtest: sshd -t: %v: %s", err, bytes.TrimSpace(out))
		}
		// An sshd older than 9.8 has no penalties to turn off.
		if err := writeFile(cfg, serverConfig(dir, port, env, penalties)); err != nil {
			return nil, err
		}
	}
	client, err := clientConfig(dir, port)
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, Config: filepath.Join(dir, "ssh_config"), Port: port, done: make(chan struct{}), log: &lockedBuffer{}}
	if err := writeFile(s.Config, client); err != nil {
		return nil, err
	}
	s.cmd = exec.Command(Sshd, "-D", "-e", "-f", cfg)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("sshtest: start sshd: %w", err)
	}
	go func() { s.cmd.Wait(); close(s.done) }()
	for {
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
			banner, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if strings.HasPrefix(banner, "SSH-") {
				return s, nil
			}
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("sshtest: sshd exited at start: %s", bytes.TrimSpace(s.log.Bytes()))
		case <-ctx.Done():
			s.Close()
			return nil, fmt.Errorf("sshtest: sshd did not accept connections: %w: %s", ctx.Err(), bytes.TrimSpace(s.log.Bytes()))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Command is the argv that runs remoteArgs on host ("home" or "hostB"):
// ssh -T -F Config host remoteArgs...
func (s *Server) Command(host string, remoteArgs ...string) []string {
	return append([]string{"ssh", "-T", "-F", s.Config, host}, remoteArgs...)
}

// SSHCommand is the ssh program with this server's config, as
// $AIPM_SSH_COMMAND takes it.
func (s *Server) SSHCommand() string { return "ssh -F " + s.Config }

// Log is what sshd wrote to its stderr so far.
func (s *Server) Log() string { return string(s.log.Bytes()) }

// Close stops sshd and every process under it (the sessions' sshd
// processes and the commands they run), within a few seconds. A command
// whose session's sshd already ended (its client killed) is no longer
// under sshd: sshd made it a process group leader, and the test that cut
// its session ends that group itself.
func (s *Server) Close() error {
	s.once.Do(func() {
		pid := s.cmd.Process.Pid
		for range 10 {
			kids := descendants(pid)
			if len(kids) == 0 {
				break
			}
			for _, k := range kids {
				syscall.Kill(k.pid, syscall.SIGKILL)
			}
			time.Sleep(10 * time.Millisecond)
		}
		syscall.Kill(-pid, syscall.SIGKILL)
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
		}
	})
	return nil
}

// A process is one entry of /proc.
type process struct {
	pid, ppid int
	comm      string // its command's name
}

// descendants lists the processes under pid, from one reading of /proc.
func descendants(pid int) []process {
	table := processes()
	var out []process
	for _, p := range table {
		for q := p.ppid; q > 1; q = table[q].ppid {
			if q == pid {
				out = append(out, p)
				break
			}
			if _, ok := table[q]; !ok {
				break
			}
		}
	}
	return out
}

// processes reads /proc's table of processes, by pid (none when /proc
// cannot be read).
func processes() map[int]process {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	table := map[int]process{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // it ended meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		open, shut := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
		if open < 0 || shut < open {
			continue
		}
		f := strings.Fields(string(stat[shut+1:]))
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil {
			table[pid] = process{pid: pid, ppid: ppid, comm: string(stat[open+1 : shut])}
		}
	}
	return table
}

// lockedBuffer is a bytes.Buffer safe for concurrent writes and reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}
