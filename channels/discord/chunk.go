package discord

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

const fenceMark = "```"

// maxRuneLen is the widest rune in UTF-16 units: a cut always has room
// for one.
const maxRuneLen = 2

// closeFence ends a chunk that stops inside a code block.
const closeFence = "\n" + fenceMark

// Split cuts text into parts of at most limit characters (counted in
// UTF-16 units, as Discord does). It cuts between lines where it can, then
// at a space, then anywhere between runes. A part that ends inside a code
// block closes it, and the next part reopens it with the same language, so
// every part renders on its own. Empty text gives no parts.
func Split(text string, limit int) []string {
	text = strings.Trim(text, "\n")
	if strings.TrimSpace(text) == "" {
		return nil
	}
	if textLen(text) <= limit {
		return []string{text}
	}
	s := splitter{limit: limit, openPos: -1}
	for _, l := range strings.Split(text, "\n") {
		s.line(l)
	}
	s.flush()
	if s.carried {
		s.flush() // the last part's code block moved on whole: send it
	}
	return s.out
}

type splitter struct {
	limit int
	out   []string
	buf   strings.Builder
	n     int    // length of buf
	body  bool   // buf holds more than a reopened fence
	fence string // the open code block's fence line ("```go"), "" outside
	// openPos and openN are buf's length and n before the line that opened
	// the current code block in this part (-1 if none); code says a line
	// of code followed it. A part must not end with an empty block.
	openPos, openN int
	code           bool
	carried        bool // buf starts with a line moved on by flush
}

func (s *splitter) line(l string) {
	next := s.fence
	if strings.Count(l, fenceMark)%2 == 1 {
		if s.fence == "" {
			next = openFence(l)
		} else {
			next = ""
		}
	}
	for {
		sep, reserve := 0, 0
		if s.n > 0 {
			sep = 1
		}
		if next != "" {
			reserve = len(closeFence)
		}
		if s.n+sep+textLen(l)+reserve <= s.limit {
			if s.fence == "" && next != "" {
				s.openPos, s.openN, s.code = s.buf.Len(), s.n, false
			} else if s.fence != "" && strings.TrimSpace(l) != "" {
				s.code = true
			}
			s.add(l, sep)
			s.fence = next
			return
		}
		if s.body {
			s.flush()
			continue
		}
		if l == "" {
			return // an empty line at a part boundary: the split replaces it
		}
		// The line alone does not fit: cut it. The part ends inside the code
		// block the line is in (or opens), so room for closing it is kept.
		if s.fence != "" {
			reserve = len(closeFence)
		}
		room := s.limit - s.n - sep - reserve
		if room < maxRuneLen && s.n > 0 {
			s.flush() // only blank lines after a reopened fence: start afresh
			continue
		}
		head, tail := cut(l, room)
		s.add(head, sep)
		s.flush()
		l = tail
	}
}

func (s *splitter) add(l string, sep int) {
	if sep > 0 {
		s.buf.WriteByte('\n')
	}
	s.buf.WriteString(l)
	s.n += sep + textLen(l)
	if strings.TrimSpace(l) != "" {
		s.body = true
	}
}

// flush ends the current part (closing an open code block) and starts the
// next one (reopening it).
func (s *splitter) flush() {
	part, closing := s.buf.String(), s.fence != ""
	carry := ""
	if closing && s.openPos > 0 && !s.code {
		// The block opened here has no code yet: move the line that opened
		// it (with any text before its fence) to the next part instead of
		// sending an empty block. At the start of a part it stays.
		carry = strings.TrimPrefix(part[s.openPos:], "\n")
		part, closing = part[:s.openPos], false
	}
	if strings.TrimSpace(part) != "" {
		part = strings.Trim(part, "\n")
		if closing {
			part += closeFence
		}
		s.out = append(s.out, part)
	}
	s.buf.Reset()
	s.n, s.body, s.openPos, s.code, s.carried = 0, false, -1, false, false
	switch {
	case carry != "":
		s.buf.WriteString(carry)
		s.n, s.openPos, s.body, s.carried = textLen(carry), 0, strings.TrimSpace(carry) != "", true
	case s.fence != "":
		reopen := s.fence
		if textLen(reopen)+len(closeFence)+1+maxRuneLen > s.limit {
			reopen = fenceMark // no room for the language word and some code
		}
		s.buf.WriteString(reopen)
		s.n = textLen(reopen)
	}
}

// openFence is the fence line that reopens a block opened by l: the marker
// and its language word, if any.
func openFence(l string) string {
	t := strings.TrimSpace(l)
	if lang, ok := strings.CutPrefix(t, fenceMark); ok && lang != "" && !strings.ContainsAny(lang, " \t`") {
		return fenceMark + lang
	}
	return fenceMark
}

// cut splits l so that head is at most room long (at least one rune),
// preferring to end head after a space in its second half.
func cut(l string, room int) (head, tail string) {
	n, end := 0, 0
	for i, r := range l {
		w := runeLen(r)
		if n+w > room && end > 0 {
			break
		}
		n += w
		end = i + utf8.RuneLen(r)
	}
	if end >= len(l) {
		return l, ""
	}
	if sp := strings.LastIndexByte(l[:end], ' '); sp > end/2 {
		end = sp + 1
	}
	return l[:end], l[end:]
}

func runeLen(r rune) int {
	if utf16.RuneLen(r) == 2 {
		return 2
	}
	return 1
}

// textLen is the length of s in UTF-16 units.
func textLen(s string) int {
	n := 0
	for _, r := range s {
		n += runeLen(r)
	}
	return n
}
