package fsstore

import "strings"

// ordinaryText returns text with everything that is not ordinary text
// blanked out byte for byte (same length, same offsets): fenced code blocks
// (``` or ~~~, their fence lines included), indented code blocks (lines
// indented four columns or more, a tab to the next multiple of four, that
// do not continue a paragraph), `>` quotes and inline code spans. A marker
// counts only in ordinary text (DESIGN section 11): one shown as code or
// quoted is an example or someone else's words, not an instruction. An
// unclosed fence runs to the end; an unmatched backtick is ordinary text,
// and so is a paragraph's indented continuation line (as in CommonMark).
func ordinaryText(text string) string {
	if !strings.ContainsAny(text, "`~>\t") && !strings.Contains(text, "    ") {
		return text
	}
	out := []byte(text)
	fence := ""     // the open fence's marker ("```", "~~~~", ...), "" outside one
	paraStart := -1 // start of the paragraph of ordinary lines being collected
	for start := 0; start < len(text); {
		end := strings.IndexByte(text[start:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += start + 1
		}
		line := text[start:end]
		trimmed := strings.TrimLeft(line, " \t")
		switch {
		case fence != "":
			blank(out, start, end)
			if closesFence(trimmed, fence) {
				fence = ""
			}
		case paraStart < 0 && indentedCode(line):
			blank(out, start, end)
		case fenceOf(trimmed) != "" || strings.HasPrefix(trimmed, ">") || strings.TrimSpace(line) == "":
			if paraStart >= 0 {
				blankCodeSpans(out, text, paraStart, start)
				paraStart = -1
			}
			if f := fenceOf(trimmed); f != "" {
				fence = f
			}
			if strings.TrimSpace(line) != "" {
				blank(out, start, end)
			}
		case paraStart < 0:
			paraStart = start
		}
		start = end
	}
	if paraStart >= 0 {
		blankCodeSpans(out, text, paraStart, len(text))
	}
	return string(out)
}

// indentedCode says whether line, outside a paragraph, is a line of an
// indented code block: not blank, and indented four columns or more (a tab
// moves to the next multiple of four).
func indentedCode(line string) bool {
	col := 0
	for i := 0; i < len(line) && col < 4; i++ {
		switch line[i] {
		case ' ':
			col++
		case '\t':
			col += 4 - col%4
		default:
			return false
		}
	}
	return col >= 4 && strings.TrimSpace(line) != ""
}

// fenceOf is the fence a line (leading spaces trimmed) opens: three or
// more backticks or tildes; "" if none.
func fenceOf(trimmed string) string {
	for _, c := range []byte{'`', '~'} {
		n := 0
		for n < len(trimmed) && trimmed[n] == c {
			n++
		}
		if n >= 3 {
			return trimmed[:n]
		}
	}
	return ""
}

// closesFence reports whether a line (leading spaces trimmed) closes fence:
// at least as many of the same character, then only spaces.
func closesFence(trimmed, fence string) bool {
	f := fenceOf(trimmed)
	return f != "" && f[0] == fence[0] && len(f) >= len(fence) && strings.TrimSpace(trimmed[len(f):]) == ""
}

// blankCodeSpans blanks the inline code spans of text[from:to]: a run of
// backticks up to the next run of the same length.
func blankCodeSpans(out []byte, text string, from, to int) {
	for i := from; i < to; {
		if text[i] != '`' {
			i++
			continue
		}
		n := backticks(text, i, to)
		closeAt := -1
		for j := i + n; j < to; {
			if text[j] != '`' {
				j++
				continue
			}
			m := backticks(text, j, to)
			if m == n {
				closeAt = j
				break
			}
			j += m
		}
		if closeAt < 0 {
			i += n // unmatched: ordinary text
			continue
		}
		blank(out, i, closeAt+n)
		i = closeAt + n
	}
}

// backticks is the length of the run of backticks at text[i:], up to to.
func backticks(text string, i, to int) int {
	n := 0
	for i+n < to && text[i+n] == '`' {
		n++
	}
	return n
}

// blank replaces out[from:to] with spaces, keeping newlines.
func blank(out []byte, from, to int) {
	for i := from; i < to; i++ {
		if out[i] != '\n' {
			out[i] = ' '
		}
	}
}
