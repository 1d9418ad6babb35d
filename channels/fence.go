package channels

import (
	"strings"
	"unicode"
)

// ParseFence reports whether line opens a fenced code block: "```lang" or
// "~~~lang", at least three markers, at most three spaces of indent, and
// (for backticks) no backtick after the marker, which would make it inline
// code such as ```x```. It returns the marker run ("```", "~~~~") and the
// language word, if any. The Telegram renderer and SplitMarkdown share it,
// so a part is cut exactly where it will be rendered as a code block.
func ParseFence(line string) (marker, lang string, ok bool) {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 || len(t) < 3 {
		return "", "", false
	}
	c := t[0]
	if c != '`' && c != '~' {
		return "", "", false
	}
	n := 0
	for n < len(t) && t[n] == c {
		n++
	}
	if n < 3 {
		return "", "", false
	}
	rest := strings.TrimSpace(t[n:])
	if c == '`' && strings.Contains(rest, "`") {
		return "", "", false
	}
	if f := strings.Fields(rest); len(f) > 0 {
		lang = f[0]
	}
	return t[:n], lang, true
}

// ClosesFence reports whether line closes a block opened with marker: a
// run of the same character at least as long, and nothing else.
func ClosesFence(line, marker string) bool {
	t := strings.TrimSpace(line)
	return strings.HasPrefix(t, marker) && strings.Trim(t, marker[:1]) == ""
}

// fenceState follows fenced code blocks line by line through one part.
type fenceState struct {
	marker string // the open block's marker; "" outside code blocks
	reopen string // the fence line that reopens the block in a new part
	code   bool   // a non-blank line of code followed the opening in this part
}

// isFence reports whether l would open or close a block in state s.
func (s fenceState) isFence(l string) bool {
	if s.marker == "" {
		_, _, ok := ParseFence(l)
		return ok
	}
	return ClosesFence(l, s.marker)
}

// fenceAhead is isFence for the first line of text. It reads the whole
// line only when it starts like a fence, so a cut in a long line stays
// cheap.
func (s fenceState) fenceAhead(text string) bool {
	t := text[spaceRun(text):]
	if !strings.HasPrefix(t, "```") && !strings.HasPrefix(t, "~~~") {
		return false
	}
	l, _, _ := strings.Cut(text, "\n")
	return s.isFence(l)
}

// line advances s past the line l.
func (s *fenceState) line(l string) {
	if s.marker == "" {
		if m, lang, ok := ParseFence(l); ok {
			reopen := m + lang
			if lang != "" && lang[0] == m[0] {
				// A tilde fence's info may start with tildes: joined to
				// the marker they would make a longer one, which the
				// part's closing line does not close (FuzzSplitMarkdown).
				reopen = m + " " + lang
			}
			*s = fenceState{marker: m, reopen: reopen}
		}
		return
	}
	if ClosesFence(l, s.marker) {
		*s = fenceState{}
		return
	}
	if !isBlank(l) {
		s.code = true
	}
}

// scan advances s past every line of text.
func (s *fenceState) scan(text string) {
	for text != "" {
		l, rest, _ := strings.Cut(text, "\n")
		s.line(l)
		text = rest
	}
}

func isBlank(s string) bool { return strings.TrimFunc(s, unicode.IsSpace) == "" }

// UTF16Len is the length of s in UTF-16 code units, the unit both Telegram
// and Discord count message length in.
func UTF16Len(s string) int {
	n := 0
	for _, r := range s {
		n += runeUnits(r)
	}
	return n
}

// utf16Prefix returns the byte length of the longest prefix of s that is at
// most units UTF-16 code units long.
func utf16Prefix(s string, units int) int {
	n := 0
	for i, r := range s {
		w := runeUnits(r)
		if n+w > units {
			return i
		}
		n += w
	}
	return len(s)
}

func runeUnits(r rune) int {
	if r >= 0x10000 && r <= unicode.MaxRune {
		return 2
	}
	return 1
}
