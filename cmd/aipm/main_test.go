package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/tidwall/gjson"

	"aipm/fsstore"
	"aipm/fsstore/fsstoretest"
	"aipm/hook"
	"aipm/internal/sshtest"
	"aipm/mcpserver"
)

func TestMain(m *testing.M) {
	// Every aipm serve these tests start checks what its calls' fast path
	// skips (mcpserver/toolcall.go).
	os.Setenv(mcpserver.EnvCheckSchemas, "1")
	testscript.Main(m, map[string]func(){
		"aipm": func() {
			pretendFilesystem()
			pretendUser()
			os.Exit(mainExit())
		},
		// claude and codex are stand-ins for the real clients
		// (fakeclient_test.go).
		"claude": func() { os.Exit(fakeClientMain("claude")) },
		"codex":  func() { os.Exit(fakeClientMain("codex")) },
		// aipm-hook is cmd/aipm-hook's main: the same hook.Command.
		"aipm-hook": func() {
			os.Exit(hook.Command(context.Background(), os.Args[1:], hook.Env{Getenv: os.Getenv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}))
		},
	})
}

// envTestFSType, in a script's environment, names the filesystem the aipm
// it runs takes every directory to be on (fsstoretest.PretendFilesystem): nfs,
// smb2, fuse, 9p, ..., or local. Only this test binary reads it.
const envTestFSType = "AIPM_TEST_FSTYPE"

func pretendFilesystem() {
	name := os.Getenv(envTestFSType)
	if name == "" {
		return
	}
	if err := fsstoretest.PretendFilesystem(name); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", envTestFSType, err)
		os.Exit(2)
	}
}

// envTestEUID, in a script's environment, is the effective user id the
// aipm it runs and the fake clients take themselves to run as (0: root).
// Only this test binary reads it; every script starts as 1000, not root,
// whoever runs the tests.
const envTestEUID = "AIPM_TEST_EUID"

func pretendUser() {
	if uid, err := strconv.Atoi(os.Getenv(envTestEUID)); err == nil {
		effectiveUID = func() int { return uid }
	}
}

// TestScripts runs testdata/script/*.txtar: the CLI's behaviour, one
// command per script. UPDATE_SCRIPTS=1 rewrites cmp targets.
//
// Every script's clients have a model endpoint that is there: a loopback
// listener that accepts and closes, named by ANTHROPIC_BASE_URL and, in
// $CODEX_HOME/config.toml, openai_base_url, with a credential for each
// (what aipm doctor looks at; the fake clients send nothing).
func TestScripts(t *testing.T) {
	endpoint := loopbackEndpoint(t)
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("..", "..", "testdata", "script"),
		RequireExplicitExec: true,
		UpdateScripts:       os.Getenv("UPDATE_SCRIPTS") == "1",
		Setup: func(e *testscript.Env) error {
			e.Setenv("AIPM_DIR", "")
			e.Setenv(mcpserver.EnvCheckSchemas, "1")
			e.Setenv(envTestEUID, "1000")
			e.Setenv("ENDPOINT", endpoint)
			e.Setenv("ANTHROPIC_BASE_URL", "http://"+endpoint)
			e.Setenv("ANTHROPIC_API_KEY", "test-key")
			codexHome := filepath.Join(e.WorkDir, ".codex-home")
			if err := os.MkdirAll(codexHome, 0o755); err != nil {
				return err
			}
			e.Setenv("CODEX_HOME", codexHome)
			e.Setenv("CODEX_API_KEY", "test-key")
			return os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(`openai_base_url = "http://`+endpoint+`/v1"`+"\n"), 0o644)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"tear":               cmdTear,
			"jsonl-count":        cmdJSONLCount,
			"tree-save":          cmdTreeSave,
			"tree-same":          cmdTreeSame,
			"setenv-from-stdout": cmdSetenvFromStdout,
			"repeat-file":        cmdRepeatFile,
			"json":               cmdJSON,
			"json-env":           cmdJSONEnv,
			"exits":              cmdExits,
			"sigint":             cmdSigint,
			"mcp":                cmdMCP,
			"authenticate":       cmdAuthenticate,
			"waitfor":            cmdWaitFor,
			"handedit":           cmdHandEdit,
			"sshd":               cmdSSHD,
			"path-without":       cmdPathWithout,
			"lease":              cmdLease,
			"expand":             cmdExpand,
		},
	})
}

// loopbackEndpoint listens on a loopback port for the test's life,
// accepting and closing every connection: a model endpoint that can be
// reached. It returns host:port.
func loopbackEndpoint(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// expand FILE replaces $VAR and ${VAR} in FILE with the script's
// environment, as cmpenv reads its file: for a client's JSON that names
// the script's own directory ($WORK).
func cmdExpand(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: expand FILE")
	}
	path := ts.MkAbs(args[0])
	data, err := os.ReadFile(path)
	ts.Check(err)
	ts.Check(os.WriteFile(path, []byte(os.Expand(string(data), ts.Getenv)), 0o644))
}

// tear FILE N cuts N bytes off the end of FILE, as a writer killed mid-line
// leaves it (txtar files always end in a newline).
func cmdTear(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: tear FILE N")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	path := ts.MkAbs(args[0])
	data, err := os.ReadFile(path)
	ts.Check(err)
	ts.Check(os.WriteFile(path, data[:len(data)-n], 0o644))
}

// jsonl-count FILE N: FILE has exactly N complete valid lines.
func cmdJSONLCount(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: jsonl-count FILE N")
	}
	want, err := strconv.Atoi(args[1])
	ts.Check(err)
	recs, _, _, err := fsstore.ReadAll(ts.MkAbs(args[0]))
	ts.Check(err)
	if (len(recs) == want) == neg {
		ts.Fatalf("%s has %d valid lines; want %s%d", args[0], len(recs), map[bool]string{true: "not ", false: ""}[neg], want)
	}
}

// tree-save NAME records a digest of every file under .ai-pm (lock files
// aside); tree-same NAME fails if anything changed since.
func cmdTreeSave(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: tree-save NAME")
	}
	ts.Setenv("TREE_"+args[0], treeDigest(ts))
}

func cmdTreeSame(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: tree-same NAME")
	}
	same := ts.Getenv("TREE_"+args[0]) == treeDigest(ts)
	if same == neg {
		ts.Fatalf(".ai-pm changed=%v since tree-save %s", !same, args[0])
	}
}

// setenv-from-stdout NAME REGEXP sets $NAME to the first submatch of
// REGEXP (multi-line mode) in the last command's stdout, e.g. a new task id.
func cmdSetenvFromStdout(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: setenv-from-stdout NAME REGEXP")
	}
	re, err := regexp.Compile("(?m)" + args[1])
	ts.Check(err)
	m := re.FindStringSubmatch(ts.ReadFile("stdout"))
	if len(m) < 2 {
		ts.Fatalf("no match for %q (with a submatch) in stdout", args[1])
	}
	ts.Setenv(args[0], m[1])
}

// repeat-file FILE N TEXT writes TEXT N times to FILE, with no newline
// (long message content). A TEXT in double quotes is unquoted as a Go
// string first, so '"\xff"' writes an invalid UTF-8 byte.
func cmdRepeatFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: repeat-file FILE N TEXT")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	text := args[2]
	if strings.HasPrefix(text, `"`) {
		text, err = strconv.Unquote(text)
		ts.Check(err)
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(strings.Repeat(text, n)), 0o644))
}

func treeDigest(ts *testscript.TestScript) string {
	root := ts.MkAbs(fsstore.DirName)
	var lines []string
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() == ".lock" {
			return nil
		}
		fi, _ := d.Info()
		entry := fmt.Sprintf("%s %v", strings.TrimPrefix(path, root), fi.Mode())
		if !d.IsDir() {
			data, _ := os.ReadFile(path)
			entry += fmt.Sprintf(" %x", sha256.Sum256(data))
		}
		lines = append(lines, entry)
		return nil
	})
	sort.Strings(lines)
	return fmt.Sprintf("%x", sha256.Sum256([]byte(strings.Join(lines, "\n"))))
}

// json FILE [PATH REGEXP]...: FILE (stdout, stderr or a path) is one valid
// JSON document, and each gjson PATH exists with a value matching REGEXP
// ("#" is an array's length, "0.id" the first element's id). The jq-free
// check of every --json output. ! json FILE: FILE is not valid JSON.
func cmdJSON(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) == 0 || len(args)%2 != 1 || (neg && len(args) != 1) {
		ts.Fatalf("usage: json FILE [PATH REGEXP]...")
	}
	data := ts.ReadFile(args[0])
	if valid := json.Valid([]byte(data)); valid == neg {
		ts.Fatalf("%s: valid JSON=%v, want %v:\n%s", args[0], valid, !neg, data)
	}
	for i := 1; i < len(args); i += 2 {
		v := gjson.Get(data, args[i])
		if !v.Exists() {
			ts.Fatalf("%s: no %s in %s", args[0], args[i], data)
		}
		re, err := regexp.Compile(args[i+1])
		ts.Check(err)
		if !re.MatchString(v.String()) {
			ts.Fatalf("%s: %s is %q, which does not match %s", args[0], args[i], v.String(), args[i+1])
		}
	}
}

// json-env NAME FILE PATH sets $NAME to the value at gjson PATH of FILE.
func cmdJSONEnv(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: json-env NAME FILE PATH")
	}
	v := gjson.Get(ts.ReadFile(args[1]), args[2])
	if !v.Exists() {
		ts.Fatalf("%s: no %s", args[1], args[2])
	}
	ts.Setenv(args[0], v.String())
}

// exits CODE COMMAND ARGS...: runs COMMAND like exec and checks its exit
// code exactly; stdout and stderr are then checked as after exec.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE COMMAND [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", strings.Join(args[1:], " "), got, want)
	}
}

// sigint CODE REGEXP aipm ARGS...: starts aipm, waits until a line of its
// stdout matches REGEXP (it is running), sends SIGINT as Ctrl-C does, and
// checks the exit code.
func cmdSigint(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 {
		ts.Fatalf("usage: sigint CODE REGEXP COMMAND [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	re, err := regexp.Compile(args[1])
	ts.Check(err)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := scriptCommand(ctx, ts, args[2], args[3:]...)
	out, err := cmd.StdoutPipe()
	ts.Check(err)
	ts.Check(cmd.Start())
	lines := bufio.NewScanner(out)
	ready := false
	for !ready && lines.Scan() {
		ready = re.MatchString(lines.Text())
	}
	if !ready {
		cmd.Wait()
		ts.Fatalf("%s ended before printing a line matching %s", args[2], args[1])
	}
	ts.Check(cmd.Process.Signal(os.Interrupt))
	go func() {
		for lines.Scan() {
		}
	}()
	err = cmd.Wait()
	got := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		got = ee.ExitCode()
	} else if err != nil {
		ts.Fatalf("%v", err)
	}
	if got != want {
		ts.Fatalf("after SIGINT %s exited %d, want %d", args[2], got, want)
	}
}

// scriptCommand is prog (found in the script's $PATH) with args, to start
// by hand in the script's directory with its environment.
func scriptCommand(ctx context.Context, ts *testscript.TestScript, prog string, args ...string) *exec.Cmd {
	path := ""
	for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
		if fi, err := os.Stat(filepath.Join(dir, prog)); err == nil && !fi.IsDir() {
			path = filepath.Join(dir, prog)
			break
		}
	}
	if path == "" {
		ts.Fatalf("%s is not in $PATH", prog)
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = ts.MkAbs(".")
	cmd.Env = scriptEnv(ts)
	return cmd
}

// scriptEnv is the script's environment, for a process started by hand.
func scriptEnv(ts *testscript.TestScript) []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "WORK", "TZ", "AIPM_DIR", "AIPM_AS", "NO_COLOR",
		fsstore.EnvAgentID, fsstore.EnvPasskeyFile, fsstore.EnvPasskey, mcpserver.EnvCheckSchemas, envTestFSType} {
		env = append(env, k+"="+ts.Getenv(k))
	}
	return env
}

// [!] mcp TOOLS CALLS PROG [ARGS...] starts PROG as an MCP client starts
// its server (stdio), through the SDK's own client: initialize, tools/list,
// then a call of every listed tool with no arguments. TOOLS gets the listed
// tools' names, one a line; CALLS one line "every tool: ANSWER" when every
// call answered the same, else "NAME: ANSWER" per tool, where ANSWER is ok
// or "error: " and the first text block. The client then closes the
// server's stdin and waits: the server must exit 0 (with !, must not).
func cmdMCP(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 3 {
		ts.Fatalf("usage: mcp TOOLS CALLS PROG [ARGS...]")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := scriptCommand(ctx, ts, args[2], args[3:]...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	defer func() { ts.Logf("%s stderr:\n%s", args[2], stderr.String()) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "aipm-testscript", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	ts.Check(err)
	listed, err := cs.ListTools(ctx, nil)
	ts.Check(err)
	var names, answers []string
	same := true
	for _, tool := range listed.Tools {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool.Name, Arguments: map[string]any{}})
		ts.Check(err)
		answer := "ok"
		if res.IsError {
			answer = "error: "
			if len(res.Content) > 0 {
				if tc, ok := res.Content[0].(*mcp.TextContent); ok {
					answer += tc.Text
				}
			}
		}
		same = same && (len(answers) == 0 || answers[0] == answer)
		names, answers = append(names, tool.Name), append(answers, answer)
	}
	calls := ""
	for i, answer := range answers {
		if same {
			calls = "every tool: " + answer + "\n"
			break
		}
		calls += names[i] + ": " + answer + "\n"
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(strings.Join(names, "\n")+"\n"), 0o644))
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(calls), 0o644))
	switch err := cs.Close(); {
	case neg && err == nil:
		ts.Fatalf("%s exited 0", args[2])
	case !neg && err != nil:
		ts.Fatalf("%s: %v", args[2], err)
	}
}

// authenticate AGENT PASSKEY [PURPOSE]: the agent authenticates to the
// project in the current directory, as its MCP server's authenticate tool
// does (it needs work to do: a task in progress or an unread message; a
// requested PURPOSE replaces the live session of that purpose). With !, the
// passkey must be refused as wrong or missing.
func cmdAuthenticate(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 && len(args) != 3 {
		ts.Fatalf("usage: authenticate AGENT PASSKEY [PURPOSE]")
	}
	purpose := ""
	if len(args) == 3 {
		purpose = args[2]
	}
	store, cfg := scriptProject(ts)
	ses, _, err := store.Authenticate(context.Background(), cfg, args[0], args[1], "", purpose)
	switch {
	case neg && errors.Is(err, fsstore.ErrBadPasskey):
		ts.Logf("refused: %v", err)
	case neg:
		ts.Fatalf("authenticate %s: got %v, want a refused passkey", args[0], err)
	case err != nil:
		ts.Fatalf("authenticate %s: %v", args[0], err)
	default:
		ts.Logf("authenticated %s: session %s (%s)", args[0], ses.ID, ses.Purpose)
	}
}

// [!] waitfor GLOB [REGEXP] waits until a file matching GLOB exists (and
// holds a match of REGEXP); with !, until none does. It fails after a
// generous bound, never on wall time otherwise: the scripts of processes
// started by aipm watch wait on files.
func cmdWaitFor(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: waitfor [!] GLOB [REGEXP]")
	}
	var re *regexp.Regexp
	if len(args) == 2 {
		re = regexp.MustCompile(args[1])
	}
	found := func() bool {
		matches, _ := filepath.Glob(ts.MkAbs(args[0]))
		for _, m := range matches {
			if re == nil {
				return true
			}
			if data, err := os.ReadFile(m); err == nil && re.Match(data) {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(60 * time.Second)
	for found() == neg {
		if time.Now().After(deadline) {
			ts.Fatalf("waitfor %v: gave up", args)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// handedit FILE KEY VALUE sets a top-level string field of a JSON document
// the way an editor saves: a new file renamed over the old one. A VALUE
// of @PATH is the content of the file PATH (a long text); one of json:TEXT
// is the JSON value TEXT (a list, such as a task's blockedBy).
func cmdHandEdit(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: handedit FILE KEY VALUE")
	}
	var value any = args[2]
	if name, ok := strings.CutPrefix(args[2], "@"); ok {
		value = ts.ReadFile(name)
	} else if text, ok := strings.CutPrefix(args[2], "json:"); ok {
		ts.Check(json.Unmarshal([]byte(text), &value))
	}
	path := ts.MkAbs(args[0])
	data, err := os.ReadFile(path)
	ts.Check(err)
	var doc map[string]any
	ts.Check(json.Unmarshal(data, &doc))
	doc[args[1]] = value
	data, err = json.MarshalIndent(doc, "", "  ")
	ts.Check(err)
	ts.Check(os.WriteFile(path+".swp", append(data, '\n'), 0o644))
	ts.Check(os.Rename(path+".swp", path))
}

// sshd VAR starts a loopback sshd (internal/sshtest) for the rest of the
// script, whose hosts home and hostB run this script's aipm (its PATH),
// and sets VAR to the ssh command that reaches them (for
// AIPM_SSH_COMMAND). The script is skipped when the ssh programs are
// missing ([!exec:...] skip for ssh, ssh-keygen and /usr/sbin/sshd).
func cmdSSHD(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: sshd VAR")
	}
	if why := sshtest.Missing(); why != "" {
		ts.Fatalf("this machine lacks %s: guard the script with [!exec:PROGRAM] skip", why)
	}
	srv, err := sshtest.Start(context.Background(), ts.MkAbs(".sshd"), "PATH="+ts.Getenv("PATH"))
	ts.Check(err)
	ts.Defer(func() { srv.Close() })
	ts.Setenv(args[0], srv.SSHCommand())
}

// path-without NAME... sets $PATH so that no program NAME is on it: each
// directory of $PATH that holds one is replaced by a directory of links to
// everything else in it (the tests' claude and codex live beside aipm).
func cmdPathWithout(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: path-without NAME...")
	}
	hidden := map[string]bool{}
	for _, a := range args {
		hidden[a] = true
	}
	var dirs []string
	for i, dir := range filepath.SplitList(ts.Getenv("PATH")) {
		entries, err := os.ReadDir(dir)
		holds := false
		for _, e := range entries {
			holds = holds || hidden[e.Name()]
		}
		if err != nil || !holds {
			dirs = append(dirs, dir)
			continue
		}
		farm := ts.MkAbs(fmt.Sprintf(".path-without/%d", i))
		ts.Check(os.MkdirAll(farm, 0o755))
		for _, e := range entries {
			if !hidden[e.Name()] {
				ts.Check(os.Symlink(filepath.Join(dir, e.Name()), filepath.Join(farm, e.Name())))
			}
		}
		dirs = append(dirs, farm)
	}
	ts.Setenv("PATH", strings.Join(dirs, string(filepath.ListSeparator)))
}

// scriptProject opens the project the script's directory is in, and its
// config.
func scriptProject(ts *testscript.TestScript) (*fsstore.Store, *fsstore.Config) {
	dir, err := fsstore.FindProject(ts.MkAbs("."))
	ts.Check(err)
	store, err := fsstore.Open(dir)
	ts.Check(err)
	cfg, err := store.LoadConfig()
	ts.Check(err)
	return store, cfg
}

// lease AGENT PASSKEY PURPOSE PATH...: the agent authenticates for PURPOSE
// (replacing its live session of that purpose) and leases PATHs
// exclusively for that session, as its MCP server's lease tool does; the
// lease ends with the session.
func cmdLease(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 4 {
		ts.Fatalf("usage: lease AGENT PASSKEY PURPOSE PATH...")
	}
	store, cfg := scriptProject(ts)
	ctx := context.Background()
	ses, _, err := store.Authenticate(ctx, cfg, args[0], args[1], "", args[2])
	ts.Check(err)
	l, err := store.TakeLease(ctx, cfg, fsstore.LeaseRequest{Holder: args[0], Session: ses.ID, Paths: args[3:], Reason: "session work"})
	ts.Check(err)
	ts.Logf("%s leased %v for session %s", args[0], l.Paths, ses.ID)
}
