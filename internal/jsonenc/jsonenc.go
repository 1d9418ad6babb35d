// Package jsonenc writes JSON strings by hand, byte for byte as
// encoding/json writes them, for the encoders of hot paths that skip
// reflection: with HTML escaping off (the transcript's lines, the model
// request) or on, as json.Marshal does (the journal's lines): quote,
// backslash and control characters escaped, invalid UTF-8 replaced by
// \ufffd, U+2028 and U+2029 escaped, and with HTML escaping <, > and &.
package jsonenc

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// AppendString appends s as a quoted JSON string to dst.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = AppendStringBody(dst, s)
	return append(dst, '"')
}

// AppendStringHTML appends s as a quoted JSON string to dst with <, >
// and & escaped too, as json.Marshal writes a string.
func AppendStringHTML(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = appendBody(dst, s, true)
	return append(dst, '"')
}

// AppendStringBody appends s escaped for the inside of a JSON string
// (without the quotes) to dst. Runs of plain bytes are copied at once.
func AppendStringBody(dst []byte, s string) []byte { return appendBody(dst, s, false) }

// appendBody is AppendStringBody, escaping <, > and & when html is set.
func appendBody(dst []byte, s string, html bool) []byte {
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && (!html || b != '<' && b != '>' && b != '&') {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}
