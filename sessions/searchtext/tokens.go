package searchtext

import (
	"bytes"
	"unicode"
	"unicode/utf8"
)

// MaxTokenBytes cuts longer words (base64 blobs, hashes) in the index.
const MaxTokenBytes = 64

// Tokens splits text into the words the search indexes and matches: runs of letters and digits, lower-cased, each once, in order
// of first appearance. Scripts written without spaces (Han, Hiragana,
// Katakana, Hangul) give overlapping pairs of characters ("会话存储" gives
// 会话, 话存, 存储), so a query of two or more such characters finds them
// anywhere in a run; a single character stands alone only when its run is
// one character long.
func Tokens(text string) []string {
	var w WordList
	w.Add(text)
	out := make([]string, w.Len())
	for i := range out {
		out[i] = string(w.Word(i))
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// WordList holds the distinct words of a text in one buffer (the indexing
// path allocates per message, not per word).
type WordList struct {
	buf  []byte
	ends []int // word i is buf[ends[i-1]:ends[i]]
}

// Len is the number of words in the list.
func (w *WordList) Len() int { return len(w.ends) }

// Word returns word i, a view of the list's buffer: the caller must not
// change it.
func (w *WordList) Word(i int) []byte {
	lo := 0
	if i > 0 {
		lo = w.ends[i-1]
	}
	return w.buf[lo:w.ends[i]]
}

// Add appends the words of text (see Tokens).
func (w *WordList) Add(text string) {
	if w.buf == nil {
		w.buf, w.ends = make([]byte, 0, len(text)), make([]int, 0, 16)
	}
	start := len(w.buf) // of the word being built
	var (
		prev rune // previous character of a CJK run
		run  int  // length of the current CJK run
	)
	// commit ends the word at buf[start:], dropping it if empty or seen.
	commit := func() {
		word := w.buf[start:]
		if len(word) > MaxTokenBytes {
			word = []byte(cutUTF8(string(word), MaxTokenBytes))
			w.buf = append(w.buf[:start], word...)
			word = w.buf[start:]
		}
		if len(word) == 0 {
			return
		}
		for i := range w.ends {
			if bytes.Equal(w.Word(i), word) {
				w.buf = w.buf[:start]
				return
			}
		}
		w.ends = append(w.ends, len(w.buf))
		start = len(w.buf)
	}
	emitRunes := func(rs ...rune) {
		for _, r := range rs {
			w.buf = utf8.AppendRune(w.buf, r)
		}
		commit()
	}
	endRun := func() {
		if run == 1 {
			emitRunes(prev)
		}
		prev, run = 0, 0
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf { // ASCII fast path
			i++
			if asciiWord[c] {
				if run > 0 {
					endRun()
				}
				if 'A' <= c && c <= 'Z' {
					c += 'a' - 'A'
				}
				w.buf = append(w.buf, c)
				continue
			}
			endRun()
			commit()
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		i += n
		switch {
		case isCJK(r):
			commit()
			r = unicode.ToLower(r)
			if run > 0 {
				emitRunes(prev, r)
			}
			prev = r
			run++
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			endRun()
			w.buf = utf8.AppendRune(w.buf, unicode.ToLower(r))
		default:
			endRun()
			commit()
		}
	}
	endRun()
	commit()
}

// asciiWord marks the ASCII letters and digits.
var asciiWord = func() (t [utf8.RuneSelf]bool) {
	for c := range t {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
	}
	return t
}()

func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

// cutUTF8 cuts s to at most n bytes without splitting a character.
func cutUTF8(s string, n int) string {
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
