package main

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// TestDocsCurrent: docs/cli.md is what the command tree says, generated with
// cobra/doc. UPDATE_DOCS=1 rewrites it; otherwise a difference fails (the
// docs-are-current check CI runs).
func TestDocsCurrent(t *testing.T) {
	got, err := cliReference()
	if err != nil {
		t.Fatal(err)
	}
	checkGenerated(t, filepath.Join("..", "..", "docs", "cli.md"), got,
		"UPDATE_DOCS=1 go test ./cmd/aipm -run TestDocsCurrent")
}

// checkGenerated compares the checked-in file path with want, or writes it
// when UPDATE_DOCS=1.
func checkGenerated(t *testing.T, path string, want []byte, regenerate string) {
	t.Helper()
	if os.Getenv("UPDATE_DOCS") == "1" {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v: run %s", path, err, regenerate)
	}
	if !bytes.Equal(have, want) {
		t.Fatalf("%s is stale: run %s", filepath.ToSlash(path), regenerate)
	}
}

// cliReference is docs/cli.md: every available command of the tree, depth
// first, as cobra/doc writes it (links turned into anchors of this one
// file), then the help topics.
func cliReference() ([]byte, error) {
	root := newCmdRoot(newEnv(func(string) string { return "" }, strings.NewReader(""), io.Discard, io.Discard))
	root.InitDefaultHelpCmd()
	root.InitDefaultHelpFlag()
	root.InitDefaultVersionFlag()
	root.InitDefaultCompletionCmd()
	var buf bytes.Buffer
	buf.WriteString("# aipm command reference\n\n" +
		"<!-- Generated from the command tree by TestDocsCurrent (cmd/aipm/docs_test.go): do not edit.\n" +
		"     Regenerate: UPDATE_DOCS=1 go test ./cmd/aipm -run TestDocsCurrent -->\n\n" +
		"Every command as `aipm COMMAND --help` prints it. The same text is in the binary:\n" +
		"`aipm help COMMAND`. Help topics are at the end.\n\n")
	anchor := func(file string) string {
		return "#" + strings.ReplaceAll(strings.TrimSuffix(file, ".md"), "_", "-")
	}
	var topics []*cobra.Command
	var walk func(c *cobra.Command) error
	walk = func(c *cobra.Command) error {
		c.DisableAutoGenTag = true
		if err := doc.GenMarkdownCustom(c, &buf, anchor); err != nil {
			return fmt.Errorf("%s: %w", c.CommandPath(), err)
		}
		for _, sub := range c.Commands() {
			switch {
			case sub.IsAdditionalHelpTopicCommand():
				topics = append(topics, sub)
			case sub.IsAvailableCommand():
				if err := walk(sub); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(root); err != nil {
		return nil, err
	}
	buf.WriteString("## Help topics\n\n")
	for _, c := range topics {
		fmt.Fprintf(&buf, "### aipm help %s\n\n%s.\n\n```\n%s\n```\n\n", c.Name(), c.Short, strings.TrimSpace(c.Long))
	}
	return append(bytes.TrimRight(buf.Bytes(), "\n"), '\n'), nil
}

// TestMarkdownLinks: every relative link in the repository's markdown files
// (outside code) names a file that exists, and a #fragment names a heading
// of that file.
func TestMarkdownLinks(t *testing.T) {
	root := filepath.Join("..", "..")
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	anchors := map[string]map[string]bool{} // by file: its headings' anchors
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		data, _ := os.ReadFile(path)
		anchors[path] = headingAnchors(string(data))
		return anchors[path]
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		// node_modules: testdata/tsclient's npm packages, not ours.
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != root || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		// *.src.md are the go-sdk's templates, whose links resolve where
		// they are rendered.
		if d.IsDir() || !strings.HasSuffix(path, ".md") || strings.HasSuffix(path, ".src.md") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range link.FindAllStringSubmatch(withoutCode(string(data)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			dest := path
			if file != "" {
				dest = filepath.Join(filepath.Dir(path), filepath.FromSlash(file))
			}
			if _, err := os.Stat(dest); err != nil {
				t.Errorf("%s: link %s: no such file", path, target)
				continue
			}
			if frag != "" && strings.HasSuffix(dest, ".md") && !anchorsOf(dest)[frag] {
				t.Errorf("%s: link %s: no heading with that anchor in %s", path, target, dest)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// withoutCode drops fenced code blocks and inline code spans, where
// brackets are not links.
func withoutCode(md string) string {
	var b strings.Builder
	fenced := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			b.WriteString(regexp.MustCompile("`[^`]*`").ReplaceAllString(line, "") + "\n")
		}
	}
	return b.String()
}

// headingAnchors returns the anchors GitHub gives md's headings: lower
// case, punctuation dropped, spaces as hyphens, a repeat numbered.
func headingAnchors(md string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			seen[a]++
			a = fmt.Sprintf("%s-%d", a, n)
		} else {
			seen[a] = 1
		}
		out[a] = true
	}
	return out
}
