package channels

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MinSplitLimit is the smallest limit SplitMarkdown honours: room for a
// reopened "```", one wide rune and the closing "```". Smaller limits are
// raised to it.
const MinSplitLimit = 10

// maxCandidates bounds the cut positions tried for one part before the
// splitter cuts hard (only pathological text gets there).
const maxCandidates = 64

// SplitMarkdown splits Markdown text into parts of at most limit UTF-16
// code units (the unit Telegram and Discord count), for channels whose
// messages have a length limit. Leading blank lines and trailing white
// space are dropped; blank text gives no parts and text within the limit
// is one part.
//
// A cut goes after a paragraph, else at the end of a line, else at a space,
// each searched in the last 70% of the room; else anywhere between runes.
// White space at a cut is dropped, except the indentation of the line that
// starts the next part. A fenced code block (see ParseFence) that spans a
// cut is closed at the end of one part and reopened, with its language, at
// the start of the next, so every part of a split renders on its own; an
// unclosed block at the end of the text is closed too. A part never ends
// with a block that has no code in it when it can be avoided: the fence
// line moves on to the next part. A cut never falls inside a fence line,
// nor where the rest of a line would become one.
//
// Only a line with a fence marker ("```", "~~~") in it that is longer than
// about half the limit can leave no room for that: such a part is cut hard
// and may leave its block open. Nothing is ever dropped but white space at
// cuts, and no part is over the limit.
func SplitMarkdown(text string, limit int) []string {
	parts := splitParts(text, limit)
	if len(parts) == 0 {
		return nil
	}
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = p.String()
	}
	return out
}

// part is one piece of a split: body is a substring of the input; reopen
// and close are fence lines the splitter adds around it.
type part struct {
	reopen, body, close string
	// hard says the part was cut without regard to code blocks (no room).
	hard bool
}

func (p part) String() string {
	if p.reopen == "" && p.close == "" {
		return p.body
	}
	var b strings.Builder
	b.Grow(len(p.reopen) + len(p.body) + len(p.close) + 2)
	if p.reopen != "" {
		b.WriteString(p.reopen)
		b.WriteByte('\n')
	}
	b.WriteString(p.body)
	if p.close != "" {
		b.WriteByte('\n')
		b.WriteString(p.close)
	}
	return b.String()
}

func splitParts(text string, limit int) []part {
	text = trimText(text)
	if text == "" {
		return nil
	}
	limit = max(limit, MinSplitLimit)
	if UTF16Len(text) <= limit {
		return []part{{body: text}}
	}
	var parts []part
	var st fenceState // the block open where rest starts
	for rest := text; rest != ""; {
		p, next, after := cutPart(rest, st, limit)
		parts = append(parts, p)
		rest, st = rest[next:], after
	}
	return parts
}

// lineEnds turns CRLF and a lone CR, line endings in Markdown as LF is,
// into LF: the splitter reads lines (and fence lines) at LF only, so a
// lone CR left a fence line the platforms see as two lines (FuzzSplitMarkdown).
var lineEnds = strings.NewReplacer("\r\n", "\n", "\r", "\n")

// trimText drops trailing white space and leading blank lines, line
// endings made LF (lineEnds).
func trimText(s string) string {
	if strings.IndexByte(s, '\r') >= 0 {
		s = lineEnds.Replace(s)
	}
	s = strings.TrimRightFunc(s, unicode.IsSpace)
	i := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsSpace(r) })
	if i < 0 {
		return ""
	}
	return s[strings.LastIndexByte(s[:i], '\n')+1:]
}

// cutPart takes the next part off rest, which starts in block st (if any).
// It returns the part, where the following part starts in rest and the
// block open there.
func cutPart(rest string, st fenceState, limit int) (part, int, fenceState) {
	c := cutter{rest: rest, start: st, room: limit}
	if st.marker != "" {
		c.reopen = st.reopen
		if UTF16Len(c.reopen)+len(st.marker)+2+2 > limit {
			c.reopen = st.marker // no room for the language and some code
		}
		if 2*len(st.marker)+2+2 > limit {
			c.reopen, c.start = "", fenceState{} // no room for a block at all
		} else {
			c.room -= UTF16Len(c.reopen) + 1
			c.start.code = false
		}
	}
	// Indentation that takes half a part is dropped, not cut around; in a
	// block the part also needs room for its closing line.
	skip, room := spaceRun(rest), c.room
	if c.start.marker != "" {
		room -= 1 + len(c.start.marker)
	}
	if 2*skip >= room {
		c.rest = rest[skip:]
	} else {
		skip = 0
	}
	p, next, after := c.cut()
	return p, skip + next, after
}

func (c *cutter) cut() (part, int, fenceState) {
	if len(c.rest) <= 3*c.room && UTF16Len(c.rest) <= c.room { // a UTF-16 unit is at most 3 bytes
		if p, next, after, ok := c.try(len(c.rest), false); ok {
			return p, next, after
		}
	}
	end := utf16Prefix(c.rest, c.room)
	for _, strict := range []bool{true, false} {
		n := 0
		for pos := range candidates(c.rest, end) {
			if n++; n > maxCandidates {
				break
			}
			if p, next, after, ok := c.try(pos, strict); ok {
				return p, next, after
			}
		}
	}
	// A long fence marker needs more room for the closing line than the
	// candidates step back: try the cut that leaves exactly that room.
	s := c.start
	s.scan(c.rest[:strings.LastIndexByte(c.rest[:end], '\n')+1])
	if s.marker != "" {
		if room := c.room - 1 - len(s.marker); room > 0 {
			if p, next, after, ok := c.try(utf16Prefix(c.rest, room), false); ok {
				return p, next, after
			}
		}
	}
	return c.hard(end)
}

// cutter cuts one part off rest.
type cutter struct {
	rest   string
	start  fenceState // the block open at the start of rest
	reopen string     // the fence line that reopens it
	room   int        // the limit less the reopened fence line
}

// try cuts at byte offset pos of rest, if that makes a good part. strict
// refuses a part that ends in a block with no code.
func (c *cutter) try(pos int, strict bool) (p part, next int, after fenceState, ok bool) {
	rest := c.rest
	lineStart := strings.LastIndexByte(rest[:pos], '\n') + 1
	tail := pos + spaceRun(rest[pos:]) // the rest of the line after the cut
	atEOL := tail == len(rest) || rest[tail] == '\n'
	if isBlank(rest[lineStart:pos]) {
		pos = lineStart
	} else if atEOL {
		pos = tail
	}
	head := strings.TrimRightFunc(rest[:pos], unicode.IsSpace)
	if head == "" {
		return part{}, 0, fenceState{}, false
	}
	s := c.start
	if pos != lineStart && !atEOL {
		// A cut inside a line: neither the line nor what the cut makes of
		// it may be a fence line.
		s.scan(rest[:lineStart])
		headLine := head[lineStart:]
		if s.fenceAhead(rest[lineStart:]) || s.isFence(headLine) || s.fenceAhead(rest[tail:]) {
			return part{}, 0, fenceState{}, false
		}
		s.line(headLine)
		next = tail
	} else {
		s.scan(head)
		next = skipBlank(rest, pos)
	}
	p = part{reopen: c.reopen, body: head}
	if s.marker != "" && s.fenceAhead(rest[next:]) {
		// The block ends right after the cut: its closing line comes along
		// rather than a reopened, empty block in the next part, if it fits
		// (blank lines may stand between).
		e := next + len(firstLine(rest[next:]))
		if body := strings.TrimRightFunc(rest[:e], unicode.IsSpace); UTF16Len(body) <= c.room {
			p.body, s, next = body, fenceState{}, skipBlank(rest, e)
		} else if strict {
			return part{}, 0, fenceState{}, false
		}
	}
	if s.marker != "" {
		if strict && !s.code {
			return part{}, 0, fenceState{}, false
		}
		p.close = s.marker
	}
	if n := UTF16Len(p.body); n > c.room || p.close != "" && n+1+len(p.close) > c.room {
		return part{}, 0, fenceState{}, false
	}
	return p, next, s, true
}

// hard cuts at end (at least one rune) when no cut keeps code blocks
// whole: the part closes its block only if there is room.
func (c *cutter) hard(end int) (part, int, fenceState) {
	from := 0
	if isBlank(c.rest[:end]) { // only indentation fits: drop it
		from = strings.IndexFunc(c.rest, func(r rune) bool { return !unicode.IsSpace(r) })
		end = from + utf16Prefix(c.rest[from:], c.room)
	}
	if end == from {
		_, n := utf8.DecodeRuneInString(c.rest[from:])
		end += n
	}
	p := part{reopen: c.reopen, body: strings.TrimRightFunc(c.rest[from:end], unicode.IsSpace), hard: true}
	s := c.start
	s.scan(p.body)
	if s.marker != "" && UTF16Len(p.body)+1+len(s.marker) <= c.room {
		p.close = s.marker
	}
	next := end
	for next < len(c.rest) && c.rest[next] != '\n' && isBlank(c.rest[next:next+1]) {
		next++
	}
	return p, skipBlank(c.rest, next), s
}

// candidates yields cut positions in s[:end] from best to worst: after a
// blank line, at a line end, at a space (each from the last back to 30%
// of the window), at end, then line ends further back and hard cuts a few
// runes before end (for when a closing fence needs room).
func candidates(s string, end int) func(yield func(int) bool) {
	return func(yield func(int) bool) {
		w := s[:end]
		lo := end * 3 / 10
		for i := strings.LastIndex(w, "\n\n"); i >= lo && i > 0; i = strings.LastIndex(w[:i], "\n\n") {
			if !yield(i + 1) {
				return
			}
		}
		for _, sep := range []byte{'\n', ' '} {
			for i := strings.LastIndexByte(w, sep); i >= lo && i > 0; i = strings.LastIndexByte(w[:i], sep) {
				if !yield(i) {
					return
				}
			}
		}
		if end > 0 && !yield(end) {
			return
		}
		for i := strings.LastIndexByte(w[:lo], '\n'); i > 0; i = strings.LastIndexByte(w[:i], '\n') {
			if !yield(i) {
				return
			}
		}
		for i, k := end, 0; i > 0 && k < 16; k++ {
			_, n := utf8.DecodeLastRuneInString(w[:i])
			if i -= n; i > 0 && !yield(i) {
				return
			}
		}
	}
}

// spaceRun is the length of the white space s starts with, up to a newline.
func spaceRun(s string) int {
	return len(s) - len(strings.TrimLeftFunc(s, func(r rune) bool { return r != '\n' && unicode.IsSpace(r) }))
}

// skipBlank returns the start of the first non-blank line of s at or after
// pos (pos itself if the rest of its line is not blank), or len(s).
func skipBlank(s string, pos int) int {
	i := strings.IndexFunc(s[pos:], func(r rune) bool { return !unicode.IsSpace(r) })
	if i < 0 {
		return len(s)
	}
	return max(pos, strings.LastIndexByte(s[:pos+i], '\n')+1)
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
