package telegram

import (
	"strings"

	"github.com/gateway/gateway/channels"
)

// FormatHTML converts the Markdown agents write into Telegram's HTML
// subset: **bold**, *italic*/_italic_, ~~strike~~, `code`, fenced code
// blocks (with language), [links](https://...), headings (bold), "- "
// lists (bullets) and "> " quotes. Everything else is text, with &, < and >
// escaped. Unclosed markers stay literal.
func FormatHTML(md string) string {
	var b strings.Builder
	b.Grow(len(md) + len(md)/8 + 16)
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		if i > 0 {
			b.WriteByte('\n')
		}
		line := lines[i]
		if marker, lang, ok := channels.ParseFence(line); ok {
			i = writeCodeBlock(&b, lines, i+1, marker, lang)
			continue
		}
		if isQuote(line) {
			b.WriteString("<blockquote>")
			for j := i; j < len(lines) && isQuote(lines[j]); j++ {
				if j > i {
					b.WriteByte('\n')
				}
				writeInline(&b, strings.TrimPrefix(strings.TrimPrefix(strings.TrimLeft(lines[j], " "), ">"), " "))
				i = j
			}
			b.WriteString("</blockquote>")
			continue
		}
		writeLine(&b, line)
	}
	return b.String()
}

// writeCodeBlock writes the fenced block whose content starts at lines[from]
// and returns the index of its closing fence (or the last line).
func writeCodeBlock(b *strings.Builder, lines []string, from int, marker, lang string) int {
	if lang != "" {
		b.WriteString(`<pre><code class="language-`)
		escapeAttr(b, lang)
		b.WriteString(`">`)
	} else {
		b.WriteString("<pre>")
	}
	end, last := len(lines)-1, len(lines)
	for j := from; j < len(lines); j++ {
		if channels.ClosesFence(lines[j], marker) {
			end, last = j, j
			break
		}
	}
	if last == len(lines) { // unclosed: the block runs to the end, minus trailing blank lines
		for last > from && strings.TrimSpace(lines[last-1]) == "" {
			last--
		}
	}
	for j := from; j < last; j++ {
		if j > from {
			b.WriteByte('\n')
		}
		escapeText(b, lines[j])
	}
	if lang != "" {
		b.WriteString("</code>")
	}
	b.WriteString("</pre>")
	return end
}

func isQuote(line string) bool { return strings.HasPrefix(strings.TrimLeft(line, " "), ">") }

// writeLine handles headings and bullets, then inline markup.
func writeLine(b *strings.Builder, line string) {
	t := strings.TrimLeft(line, " ")
	indent := line[:len(line)-len(t)]
	if h := headingText(t); h != "" {
		b.WriteString("<b>")
		writeInline(b, h)
		b.WriteString("</b>")
		return
	}
	if len(t) >= 2 && (t[0] == '-' || t[0] == '*' || t[0] == '+') && t[1] == ' ' && !isRule(t) {
		b.WriteString(indent)
		b.WriteString("• ")
		writeInline(b, t[2:])
		return
	}
	writeInline(b, line)
}

func headingText(t string) string {
	n := 0
	for n < len(t) && n < 7 && t[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || n >= len(t) || t[n] != ' ' {
		return ""
	}
	return strings.TrimRight(strings.TrimSpace(t[n:]), "#")
}

func isRule(t string) bool {
	s := strings.ReplaceAll(t, " ", "")
	return len(s) >= 3 && strings.Trim(s, s[:1]) == ""
}

// writeInline converts inline markup of s.
func writeInline(b *strings.Builder, s string) {
	for i := 0; i < len(s); {
		c := s[i]
		switch c {
		case '\\':
			if i+1 < len(s) && isPunct(s[i+1]) {
				escapeByte(b, s[i+1])
				i += 2
				continue
			}
		case '`':
			if n := codeSpan(b, s[i:]); n > 0 {
				i += n
				continue
			}
		case '*', '_', '~':
			if n := emphasis(b, s, i); n > 0 {
				i += n
				continue
			}
		case '[':
			if n := link(b, s[i:]); n > 0 {
				i += n
				continue
			}
		}
		escapeByte(b, c)
		i++
	}
}

// codeSpan writes `code` at the start of s and returns its length, 0 if
// s does not start a closed code span.
func codeSpan(b *strings.Builder, s string) int {
	n := 0
	for n < len(s) && s[n] == '`' {
		n++
	}
	delim := s[:n]
	for j := n; j < len(s); {
		k := strings.Index(s[j:], delim)
		if k < 0 {
			return 0
		}
		k += j
		e := k + n
		if e < len(s) && s[e] == '`' { // longer run: not our closer
			for e < len(s) && s[e] == '`' {
				e++
			}
			j = e
			continue
		}
		inner := s[n:k]
		if len(inner) >= 2 && inner[0] == ' ' && inner[len(inner)-1] == ' ' && strings.Trim(inner, " ") != "" {
			inner = inner[1 : len(inner)-1]
		}
		if inner == "" {
			return 0
		}
		b.WriteString("<code>")
		escapeText(b, inner)
		b.WriteString("</code>")
		return e
	}
	return 0
}

// emphasis handles **, __, ~~, * and _ at s[i]; it returns the bytes used.
func emphasis(b *strings.Builder, s string, i int) int {
	c := s[i]
	double := i+1 < len(s) && s[i+1] == c
	if c == '~' && !double {
		return 0
	}
	if double {
		tag := "b"
		if c == '~' {
			tag = "s"
		}
		open := i + 2
		if open >= len(s) || s[open] == ' ' || (c == '_' && i > 0 && isWord(s[i-1])) {
			return 0
		}
		for j := open + 1; j+1 < len(s); j++ {
			if s[j] == c && s[j+1] == c && s[j-1] != ' ' && (c != '_' || j+2 >= len(s) || !isWord(s[j+2])) {
				writeTag(b, tag, s[open:j])
				return j + 2 - i
			}
		}
		return 0
	}
	// Single markers never open or close inside a word: snake_case,
	// 2*3*4 and file*.go stay literal.
	open := i + 1
	if open >= len(s) || s[open] == ' ' || (i > 0 && isWord(s[i-1])) {
		return 0
	}
	for j := open + 1; j < len(s); j++ {
		if s[j] != c || s[j-1] == ' ' || s[j-1] == c || (j+1 < len(s) && s[j+1] == c) {
			continue
		}
		if j+1 < len(s) && isWord(s[j+1]) {
			continue
		}
		writeTag(b, "i", s[open:j])
		return j + 1 - i
	}
	return 0
}

func writeTag(b *strings.Builder, tag, inner string) {
	b.WriteString("<" + tag + ">")
	writeInline(b, inner)
	b.WriteString("</" + tag + ">")
}

// link handles [text](url) at the start of s for web, tg and mailto URLs.
// Parentheses inside the URL must balance, as in CommonMark: a Wikipedia
// link's "(programming_language)" stays in it.
func link(b *strings.Builder, s string) int {
	close := strings.Index(s, "](")
	if close < 0 {
		return 0
	}
	text := s[1:close]
	if text == "" || strings.ContainsAny(text, "[]\n") {
		return 0
	}
	end := closingParen(s[close+2:])
	if end < 0 {
		return 0
	}
	href := strings.TrimSpace(s[close+2 : close+2+end])
	if href == "" || strings.ContainsAny(href, " \n") || !safeURL(href) {
		return 0
	}
	b.WriteString(`<a href="`)
	escapeAttr(b, href)
	b.WriteString(`">`)
	writeInline(b, text)
	b.WriteString("</a>")
	return close + 2 + end + 1
}

// closingParen is the index in s of the ")" that closes a "(" just before
// s, skipping balanced pairs; -1 if there is none.
func closingParen(s string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			if depth == 0 {
				return i
			}
			depth--
		}
	}
	return -1
}

func safeURL(u string) bool {
	l := strings.ToLower(u)
	return strings.HasPrefix(l, "https://") || strings.HasPrefix(l, "http://") ||
		strings.HasPrefix(l, "tg://") || strings.HasPrefix(l, "mailto:")
}

func isWord(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

func isPunct(c byte) bool { return strings.IndexByte("\\`*_{}[]()#+-.!|~<>&", c) >= 0 }

func escapeByte(b *strings.Builder, c byte) {
	switch c {
	case '&':
		b.WriteString("&amp;")
	case '<':
		b.WriteString("&lt;")
	case '>':
		b.WriteString("&gt;")
	default:
		b.WriteByte(c)
	}
}

func escapeText(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		escapeByte(b, s[i])
	}
}

func escapeAttr(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			b.WriteString("&quot;")
			continue
		}
		escapeByte(b, s[i])
	}
}
