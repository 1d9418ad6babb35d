package telegram

import (
	"strings"
	"unicode/utf8"
)

// MaxMessageLength is Telegram's limit for one message's text, in UTF-16
// code units after entity parsing.
const MaxMessageLength = 4096

// SplitMarkdown splits md into chunks of at most limit UTF-16 code units,
// breaking at a paragraph, else a line, else a space, else anywhere (never
// inside a UTF-8 sequence). A fenced code block that spans a break is
// closed at the end of one chunk and reopened, with its language, at the
// start of the next, so every chunk is complete Markdown. The rendered
// HTML of a chunk is never longer (in visible characters) than the chunk.
func SplitMarkdown(md string, limit int) []string {
	md = strings.TrimSpace(md)
	if md == "" {
		return nil
	}
	if limit < 16 {
		limit = 16
	}
	var chunks []string
	for utf16Len(md) > limit {
		chunk, rest := cutChunk(md, limit)
		if len(rest) >= len(md) { // no progress (pathological fences): cut hard
			end := prefixBytes(md, limit)
			chunk, rest = md[:end], md[end:]
		}
		if c := strings.TrimRight(chunk, " \n"); c != "" {
			chunks = append(chunks, c)
		}
		md = rest
	}
	if md != "" {
		chunks = append(chunks, md)
	}
	return chunks
}

// cutChunk takes the first chunk off s (longer than limit).
func cutChunk(s string, limit int) (chunk, rest string) {
	window := limit
	for {
		end := prefixBytes(s, window)
		cut := bestCut(s, end)
		marker, opening := fenceStateAt(s, cut)
		if marker == "" {
			return s[:cut], strings.TrimLeft(s[cut:], " \n")
		}
		closing := "\n" + marker
		if strings.HasSuffix(s[:cut], "\n") {
			closing = marker
		}
		if utf16Len(s[:cut])+len(closing) > limit {
			if window == limit && limit-len(closing)-1 > 0 {
				window = limit - len(closing) - 1
				continue
			}
			// The fence line alone nearly fills a chunk (tiny limits only).
			end := prefixBytes(s, limit)
			return s[:end], s[end:]
		}
		// Reopen the block; its first line continues where the cut was.
		r := s[cut:]
		r = strings.TrimPrefix(r, "\n")
		if fenceClose(firstLine(r), marker) {
			// The cut fell just before the closing fence: nothing to reopen.
			return s[:cut] + closing, strings.TrimLeft(strings.TrimPrefix(strings.TrimLeft(r, " "), marker), " \n")
		}
		return s[:cut] + closing, opening + "\n" + r
	}
}

// bestCut picks the break position in s[:end]: after the last blank line,
// else the last newline, else the last space, in the later 30% … 100% of
// the window; else end itself.
func bestCut(s string, end int) int {
	w := s[:end]
	lo := end * 3 / 10
	if i := strings.LastIndex(w, "\n\n"); i >= lo && i > 0 {
		return i + 1
	}
	if i := strings.LastIndexByte(w, '\n'); i >= lo && i > 0 {
		return i
	}
	if i := strings.LastIndexByte(w, ' '); i >= lo && i > 0 {
		return i
	}
	if end == 0 { // one rune wider than the limit cannot happen for limit ≥ 2
		_, n := utf8.DecodeRuneInString(s)
		return n
	}
	return end
}

// fenceStateAt reports the fence open at byte offset pos of s: its marker
// and opening line ("```go"), or "" when pos is outside code blocks.
func fenceStateAt(s string, pos int) (marker, opening string) {
	for start := 0; start < pos; {
		nl := strings.IndexByte(s[start:], '\n')
		lineEnd := len(s)
		if nl >= 0 {
			lineEnd = start + nl
		}
		line := s[start:lineEnd]
		if marker == "" {
			if m, _, ok := fenceOpen(line); ok && lineEnd <= pos {
				marker, opening = m, strings.TrimSpace(line)
			}
		} else if fenceClose(line, marker) && lineEnd <= pos {
			marker, opening = "", ""
		}
		if nl < 0 {
			break
		}
		start = lineEnd + 1
	}
	return marker, opening
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// prefixBytes returns the byte length of the longest prefix of s that is at
// most units UTF-16 code units long.
func prefixBytes(s string, units int) int {
	n := 0
	for i, r := range s {
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if n+w > units {
			return i
		}
		n += w
	}
	return len(s)
}

// utf16Len is the length of s in UTF-16 code units.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}
