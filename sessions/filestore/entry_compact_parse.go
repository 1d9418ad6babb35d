package filestore

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"
)

// Reading an entry's JSON as json.Marshal writes it into a compactEntry
// (entry_compact.go says what that form is): anything else is declined.

// compactOf returns the compact form of b when b is exactly what
// json.Marshal writes for some sessions.Entry; ok is false for anything
// else (other spacing, order, escapes, numbers, unknown fields, invalid
// JSON), which the caller decodes with encoding/json. scratch, if not nil,
// is a buffer it may use; the result is a new allocation of its own size.
func compactOf(scratch, b []byte) (c compactEntry, ok bool) {
	body, ok := compactBody(scratch, b)
	if !ok {
		return nil, false
	}
	// Appending to nil allocates once and clears only the spare capacity.
	return append(compactEntry(nil), body...), true
}

// compactBody is compactOf without the copy: the compact form, in scratch
// when it has room (valid until scratch is used again).
func compactBody(scratch, b []byte) (c []byte, ok bool) {
	// The body goes after room for the bit set, which is known at the end.
	body := append(scratch[:0], make([]byte, binary.MaxVarintLen64)...)
	var present uint64
	i, next := 1, 0 // position in b; next field of entryFields
	if len(b) < 2 || b[0] != '{' {
		return nil, false
	}
	for b[i] != '}' {
		if next > 0 {
			if b[i] != ',' {
				return nil, false
			}
			i++
		}
		// The field's name: the next present field in order.
		j := next
		for ; j < len(entryFields); j++ {
			if bytes.HasPrefix(b[i:], entryFields[j].key) {
				break
			}
			if !entryFields[j].omitEmpty {
				return nil, false // absent, or out of order
			}
		}
		if j == len(entryFields) {
			return nil, false // unknown
		}
		f := &entryFields[j]
		i += len(f.key)
		var v []byte
		switch f.kind {
		case kindString:
			if v, i, ok = canonicalString(b, i); !ok || (len(v) == 0 && f.omitEmpty) {
				return nil, false
			}
			body = binary.AppendUvarint(body, uint64(len(v)))
			body = append(body, v...)
		case kindInt:
			var n int64
			if n, i, ok = canonicalInt(b, i, f.bits); !ok || (n == 0 && f.omitEmpty) {
				return nil, false
			}
			body = binary.AppendVarint(body, n)
		case kindObject:
			start := i
			if _, i, ok = canonicalObject(b, i, f.members, nil); !ok {
				return nil, false
			}
			body = binary.AppendUvarint(body, uint64(i-start))
			body = append(body, b[start:i]...)
		case kindTime:
			if v, i, ok = canonicalString(b, i); !ok {
				return nil, false
			}
			if sec, nsec, utc := parseUTC(v); utc {
				body = append(body, tagUTC)
				body = binary.AppendVarint(body, sec)
				body = binary.AppendUvarint(body, uint64(nsec))
				break
			}
			var t time.Time
			q := b[i-len(v)-2 : i]
			if t.UnmarshalJSON(q) != nil {
				return nil, false
			}
			if m, err := t.MarshalJSON(); err != nil || !bytes.Equal(m, q) {
				return nil, false
			}
			body = append(body, tagText)
			body = binary.AppendUvarint(body, uint64(len(v)))
			body = append(body, v...)
		}
		present |= 1 << j
		next = j + 1
		if i >= len(b) {
			return nil, false
		}
	}
	for ; next < len(entryFields); next++ {
		if !entryFields[next].omitEmpty {
			return nil, false
		}
	}
	if i != len(b)-1 {
		return nil, false
	}
	var hdr [binary.MaxVarintLen64]byte
	n := binary.PutUvarint(hdr[:], present)
	start := binary.MaxVarintLen64 - n
	copy(body[start:], hdr[:n])
	return body[start:], true
}

// canonicalObject reads the JSON object at b[i] as json.Marshal writes a
// struct of the string members ms that is not zero (each member absent when
// empty, in order, at least one) and returns the position after it. Each
// member's text between its quotes is passed to each, if not nil, with its
// index in ms.
func canonicalObject(b []byte, i int, ms []objectMember, each func(k int, v []byte)) (n int, end int, ok bool) {
	if i >= len(b) || b[i] != '{' {
		return 0, 0, false
	}
	i++
	next := 0
	for i < len(b) && b[i] != '}' {
		if n > 0 {
			if b[i] != ',' {
				return 0, 0, false
			}
			i++
		}
		k := next
		for ; k < len(ms) && !bytes.HasPrefix(b[i:], ms[k].key); k++ {
		}
		if k == len(ms) {
			return 0, 0, false // unknown, or out of order
		}
		i += len(ms[k].key)
		var v []byte
		if v, i, ok = canonicalString(b, i); !ok || len(v) == 0 {
			return 0, 0, false
		}
		if each != nil {
			each(k, v)
		}
		n++
		next = k + 1
	}
	if i >= len(b) || n == 0 {
		return 0, 0, false
	}
	return n, i + 1, true
}

// canonicalInt reads the JSON number at b[i] as json.Marshal writes an
// integer of the given size (no leading zeros, no "-0", in range) and
// returns it and the position after it.
func canonicalInt(b []byte, i, bits int) (n int64, end int, ok bool) {
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	start := i
	limit := uint64(1)<<(bits-1) - 1 // the largest, or with neg the smallest's magnitude less one
	if neg {
		limit++
	}
	var u uint64
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		d := uint64(b[i] - '0')
		if u > (limit-d)/10 {
			return 0, 0, false // out of range
		}
		u = u*10 + d
	}
	switch digits := i - start; {
	case digits == 0, digits > 1 && b[start] == '0', neg && u == 0:
		return 0, 0, false
	}
	if neg {
		return -int64(u-1) - 1, i, true
	}
	return int64(u), i, true
}

// plainByte marks the bytes json.Marshal writes as they are in a string
// (printable ASCII but the quote, backslash and HTML characters).
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = !strings.ContainsRune("\"\\<>&", rune(c))
	}
	return t
}()

// canonicalString reads the JSON string at b[i] and returns what is
// between its quotes and the position after it; ok only when json.Marshal
// writes that string so (its escapes, and only where it escapes).
func canonicalString(b []byte, i int) (v []byte, end int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	start := i + 1
	plain := true // nothing json.Marshal escapes, no escape
	for i = start; i < len(b) && b[i] != '"'; i++ {
		if plainByte[b[i]] {
			continue
		}
		switch c := b[i]; {
		case c == '\\':
			plain = false
			i++ // the escaped byte (a \u's hex digits are plain)
		case c < 0x20:
			return nil, 0, false // invalid JSON
		case c == '<' || c == '>' || c == '&' || c >= utf8.RuneSelf:
			plain = false
		}
	}
	if i >= len(b) {
		return nil, 0, false
	}
	v, end = b[start:i], i+1
	if !plain && !marshalsAs(b[start-1:end]) {
		return nil, 0, false
	}
	return v, end, true
}

// marshalsAs says whether the JSON string q is how json.Marshal writes the
// string it holds: the slow check for strings with escapes, HTML
// characters or non-ASCII text.
func marshalsAs(q []byte) bool {
	if bytes.IndexByte(q, '\\') < 0 {
		// Only what json.Marshal writes as is: valid UTF-8 without U+2028
		// and U+2029 (the HTML characters were seen by the caller).
		v := q[1 : len(q)-1]
		return utf8.Valid(v) && !bytes.ContainsAny(v, "<>&\u2028\u2029")
	}
	var s string
	if json.Unmarshal(q, &s) != nil {
		return false
	}
	m, err := json.Marshal(s)
	return err == nil && bytes.Equal(m, q)
}

// parseUTC reads t, a time as MarshalJSON writes a UTC one
// ("2006-01-02T15:04:05.999999999Z", the fraction without trailing
// zeros); ok is false for anything else, which the caller checks the slow
// way.
func parseUTC(t []byte) (sec int64, nsec int, ok bool) {
	n := len(t)
	if n < 20 || t[n-1] != 'Z' || t[4] != '-' || t[7] != '-' || t[10] != 'T' || t[13] != ':' || t[16] != ':' {
		return 0, 0, false
	}
	num := func(from, to int) int {
		v := 0
		for _, c := range t[from:to] {
			if c < '0' || c > '9' {
				return -1
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	year, month, day := num(0, 4), num(5, 7), num(8, 10)
	hour, minute, second := num(11, 13), num(14, 16), num(17, 19)
	if year < 0 || month < 1 || month > 12 || day < 1 || day > daysIn(month, year) ||
		hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59 {
		return 0, 0, false
	}
	switch frac := t[19 : n-1]; {
	case len(frac) == 0:
	case len(frac) < 2 || len(frac) > 10 || frac[0] != '.' || frac[len(frac)-1] == '0':
		return 0, 0, false
	default:
		if nsec = num(20, n-1); nsec < 0 {
			return 0, 0, false
		}
		for range 10 - len(frac) {
			nsec *= 10
		}
	}
	return unixDays(year, month, day)*86400 + int64(hour*3600+minute*60+second), nsec, true
}

// unixDays is the number of days from 1970-01-01 to the given date of the
// proleptic Gregorian calendar (as time.Date counts them).
func unixDays(year, month, day int) int64 {
	y := int64(year)
	if month <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400                     // [0, 399]
	mp := int64((month + 9) % 12)          // March is 0
	doy := (153*mp+2)/5 + int64(day) - 1   // [0, 365]
	doe := yoe*365 + yoe/4 - yoe/100 + doy // [0, 146096]
	return era*146097 + doe - 719468
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
