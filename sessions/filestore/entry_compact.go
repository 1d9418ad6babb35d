package filestore

import (
	"bytes"
	"encoding"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/bits"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gateway/gateway/sessions"
)

// compactEntry is how a Store holds an entry in memory: a lossless compact
// form of the entry's JSON exactly as json.Marshal writes it (and as
// sessions.json holds it), without the field names and with UTC times in
// binary. An entry of a real index takes about 150 bytes this way, against
// some 650 for a decoded sessions.Entry and its strings, so 100,000
// sessions are held in a few tens of MB.
//
// It is built only from that exact encoding (compactOf): any other input,
// hand-edited or from another writer, is decoded by encoding/json first and
// re-encoded (packEntry). So expanding it (appendJSON) gives the same
// bytes back, and decoding it (entry) gives what encoding/json gives for
// them — what a reload of the file would give. It is never changed: a
// change builds a new one.
//
// Layout: the set of the fields present (a uvarint with bit i for
// entryFields[i]), then each present field in order: a string as a uvarint
// length and the bytes between its quotes (escaped as json.Marshal
// escapes); an integer as a varint; a time as a tag byte, then for tagUTC
// the Unix seconds (varint) and nanoseconds (uvarint) of a UTC time, for
// tagText the uvarint length and the RFC 3339 text of any other.
type compactEntry []byte

// Tags of a time field in a compactEntry.
const (
	tagUTC  = 0
	tagText = 1
)

type fieldKind uint8

const (
	kindString fieldKind = iota + 1
	kindInt
	kindTime
)

// entryField is one field of sessions.Entry as json.Marshal writes it.
type entryField struct {
	name      string
	key       []byte // `"name":`
	kind      fieldKind
	index     int  // in sessions.Entry
	bits      int  // an integer's size
	omitEmpty bool // absent when zero
}

// entryFields are the fields of sessions.Entry in the order json.Marshal
// writes them; fieldSessionID and the others index it.
var (
	entryFields = entryFieldsOf(reflect.TypeFor[sessions.Entry]())

	fieldSessionKey        = fieldIndex("sessionKey")
	fieldSessionID         = fieldIndex("sessionId")
	fieldUpdatedAt         = fieldIndex("updatedAt")
	fieldLastInteractionAt = fieldIndex("lastInteractionAt")
	fieldMessageCount      = fieldIndex("messageCount")
	fieldCompactionOffset  = fieldIndex("compactionOffset")
)

// entryFieldsOf lists the fields of the entry type t. A field of a kind
// without a compact form is a programming error, caught by every test of
// the package: extend the codec with it.
func entryFieldsOf(t reflect.Type) []entryField {
	timeType := reflect.TypeFor[time.Time]()
	marshaler := []reflect.Type{reflect.TypeFor[json.Marshaler](), reflect.TypeFor[json.Unmarshaler](),
		reflect.TypeFor[encoding.TextMarshaler](), reflect.TypeFor[encoding.TextUnmarshaler]()}
	var out []entryField
	for i := range t.NumField() {
		f := t.Field(i)
		unsupported := func(why string) {
			panic(fmt.Sprintf("filestore: field %s of %s has no compact form (%s): extend entry_compact.go", f.Name, t, why))
		}
		if !f.IsExported() {
			continue // json.Marshal leaves it out
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" && opts == "" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if f.Anonymous || (opts != "" && opts != "omitempty") {
			unsupported("embedded, or a json option other than omitempty")
		}
		ef := entryField{name: name, key: []byte(strconv.Quote(name) + ":"), index: i, omitEmpty: opts == "omitempty"}
		switch {
		case f.Type == timeType:
			// omitempty never omits a struct.
			ef.kind, ef.omitEmpty = kindTime, false
		case f.Type.Kind() == reflect.String:
			ef.kind = kindString
		case f.Type.Kind() >= reflect.Int && f.Type.Kind() <= reflect.Int64:
			ef.kind, ef.bits = kindInt, f.Type.Bits()
		default:
			unsupported("type " + f.Type.String())
		}
		if ef.kind != kindTime {
			for _, m := range marshaler {
				if f.Type.Implements(m) || reflect.PointerTo(f.Type).Implements(m) {
					unsupported("its own JSON encoding")
				}
			}
		}
		out = append(out, ef)
	}
	if len(out) > 64 {
		panic(fmt.Sprintf("filestore: %s has %d fields; a compactEntry holds 64", t, len(out)))
	}
	return out
}

func fieldIndex(name string) int {
	for i, f := range entryFields {
		if f.name == name {
			return i
		}
	}
	panic("filestore: sessions.Entry has no field " + name)
}

// packEntry is the compact form of e: what compactOf makes of the JSON
// json.Marshal writes for e. The common entry (strings json.Marshal writes
// as they are, times it writes as RFC 3339 checked below) is packed
// directly; any other goes through json.Marshal.
func packEntry(e *sessions.Entry) (compactEntry, error) {
	if c, ok := packDirect(e); ok {
		return c, nil
	}
	return packJSON(e)
}

// packDirect packs e without encoding it; ok is false when it has a field
// that needs encoding/json's word (a string it escapes or that is not
// valid UTF-8, a time it would not write and read back the same).
func packDirect(e *sessions.Entry) (compactEntry, bool) {
	var (
		buf     [512]byte
		present uint64
	)
	body := buf[:binary.MaxVarintLen64]
	rv := reflect.ValueOf(e).Elem()
	for j := range entryFields {
		f := &entryFields[j]
		fv := rv.Field(f.index)
		switch f.kind {
		case kindString:
			s := fv.String()
			if s == "" && f.omitEmpty {
				continue
			}
			if !writtenAsIs(s) {
				return nil, false
			}
			body = binary.AppendUvarint(body, uint64(len(s)))
			body = append(body, s...)
		case kindInt:
			n := fv.Int()
			if n == 0 && f.omitEmpty {
				continue
			}
			body = binary.AppendVarint(body, n)
		case kindTime:
			t := *fv.Addr().Interface().(*time.Time)
			if _, offset := t.Zone(); offset == 0 && t.Year() >= 0 && t.Year() <= 9999 {
				// json.Marshal writes it with "Z", which compactOf holds
				// as a UTC time.
				body = append(body, tagUTC)
				body = binary.AppendVarint(body, t.Unix())
				body = binary.AppendUvarint(body, uint64(t.Nanosecond()))
				break
			}
			q, err := t.MarshalJSON()
			if err != nil || !readsBack(q) {
				return nil, false
			}
			body = append(body, tagText)
			body = binary.AppendUvarint(body, uint64(len(q)-2))
			body = append(body, q[1:len(q)-1]...)
		}
		present |= 1 << j
	}
	var hdr [binary.MaxVarintLen64]byte
	n := binary.PutUvarint(hdr[:], present)
	start := binary.MaxVarintLen64 - n
	copy(body[start:], hdr[:n])
	return append(compactEntry(nil), body[start:]...), true
}

// writtenAsIs says whether json.Marshal writes s between quotes as it is:
// printable ASCII but the quote, backslash and HTML characters, and valid
// UTF-8 but U+2028 and U+2029.
func writtenAsIs(s string) bool {
	for i := 0; i < len(s); {
		if plainByte[s[i]] {
			i++
			continue
		}
		if s[i] < utf8.RuneSelf {
			return false
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || r == '\u2028' || r == '\u2029' {
			return false
		}
		i += size
	}
	return true
}

// readsBack says whether the JSON time q decodes to a time that encodes
// to q again (compactOf holds only such).
func readsBack(q []byte) bool {
	var t time.Time
	if t.UnmarshalJSON(q) != nil {
		return false
	}
	m, err := t.MarshalJSON()
	return err == nil && bytes.Equal(m, q)
}

// packJSON is packEntry through json.Marshal.
func packJSON(e *sessions.Entry) (compactEntry, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("sessions: encode entry %q: %w", sessions.Clip(e.SessionKey), err)
	}
	c, ok := compactOf(nil, b)
	if !ok {
		// Strings that are not valid UTF-8 are written with \ufffd escapes
		// that decode to U+FFFD, which json.Marshal writes as is: hold
		// what a reload would (one more decoding and encoding).
		var d sessions.Entry
		if json.Unmarshal(b, &d) == nil {
			if b2, err := json.Marshal(&d); err == nil {
				c, ok = compactOf(nil, b2)
			}
		}
	}
	if !ok {
		// json.Marshal wrote something compactOf does not know: a bug.
		return nil, fmt.Errorf("sessions: encode entry %q: no compact form for %s", sessions.Clip(e.SessionKey), sessions.Clip(string(b)))
	}
	return c, nil
}

// compactOf returns the compact form of b when b is exactly what
// json.Marshal writes for some sessions.Entry; ok is false for anything
// else (other spacing, order, escapes, numbers, unknown fields, invalid
// JSON), which the caller decodes with encoding/json. scratch, if not nil,
// is a buffer it may use; the result is a new allocation of its own size.
func compactOf(scratch, b []byte) (c compactEntry, ok bool) {
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
	// Appending to nil allocates once and clears only the spare capacity.
	return append(compactEntry(nil), body[start:]...), true
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

// fieldCursor walks the present fields of a compactEntry in order.
type fieldCursor struct {
	c       compactEntry
	present uint64
	i, j    int // position in c; next field of entryFields
}

func (c compactEntry) cursor() fieldCursor {
	present, i := binary.Uvarint(c)
	return fieldCursor{c: c, present: present, i: i}
}

// next returns the next present field and its encoded value; ok is false
// after the last.
func (fc *fieldCursor) next() (j int, v []byte, ok bool) {
	rest := fc.present >> fc.j
	if rest == 0 {
		return 0, nil, false
	}
	j = fc.j + bits.TrailingZeros64(rest)
	fc.j = j + 1
	c, start := fc.c, fc.i
	switch entryFields[j].kind {
	case kindString:
		n, w := binary.Uvarint(c[start:])
		fc.i += w + int(n)
	case kindInt:
		_, w := binary.Varint(c[start:])
		fc.i += w
	case kindTime:
		if c[start] == tagUTC {
			_, w := binary.Varint(c[start+1:])
			_, w2 := binary.Uvarint(c[start+1+w:])
			fc.i += 1 + w + w2
		} else {
			n, w := binary.Uvarint(c[start+1:])
			fc.i += 1 + w + int(n)
		}
	}
	return j, c[start:fc.i], true
}

// field returns the encoded value of field j; ok is false when it is
// absent (zero).
func (c compactEntry) field(j int) (v []byte, ok bool) {
	fc := c.cursor()
	for k, v, more := fc.next(); more && k <= j; k, v, more = fc.next() {
		if k == j {
			return v, true
		}
	}
	return nil, false
}

// stringValue decodes an encoded string field.
func stringValue(v []byte) string {
	n, w := binary.Uvarint(v)
	s := v[w : w+int(n)]
	if bytes.IndexByte(s, '\\') < 0 {
		return string(s)
	}
	var out string
	_ = json.Unmarshal(quoted(s), &out) // checked by compactOf
	return out
}

// quoted is s between double quotes.
func quoted(s []byte) []byte {
	q := make([]byte, 0, len(s)+2)
	q = append(q, '"')
	q = append(q, s...)
	return append(q, '"')
}

// timeValue decodes an encoded time field.
func timeValue(v []byte) time.Time {
	if v[0] == tagUTC {
		sec, w := binary.Varint(v[1:])
		nsec, _ := binary.Uvarint(v[1+w:])
		return time.Unix(sec, int64(nsec)).UTC()
	}
	n, w := binary.Uvarint(v[1:])
	var t time.Time
	_ = t.UnmarshalJSON(quoted(v[1+w : 1+w+int(n)])) // checked by compactOf
	return t
}

// String fields' and times' accessors without decoding the whole entry.

func (c compactEntry) str(j int) string {
	if v, ok := c.field(j); ok {
		return stringValue(v)
	}
	return ""
}

func (c compactEntry) time(j int) time.Time {
	if v, ok := c.field(j); ok {
		return timeValue(v)
	}
	return time.Time{}
}

func (c compactEntry) int(j int) int64 {
	if v, ok := c.field(j); ok {
		n, _ := binary.Varint(v)
		return n
	}
	return 0
}

// entry decodes c.
func (c compactEntry) entry() sessions.Entry {
	var (
		e     sessions.Entry
		buf   [512]byte
		spans [64]struct{ j, from, to int } // strings held in buf
		n     int
	)
	text := buf[:0]
	rv := reflect.ValueOf(&e).Elem()
	fc := c.cursor()
	for j, v, ok := fc.next(); ok; j, v, ok = fc.next() {
		f := &entryFields[j]
		fv := rv.Field(f.index)
		switch f.kind {
		case kindString:
			size, w := binary.Uvarint(v)
			if s := v[w : w+int(size)]; bytes.IndexByte(s, '\\') < 0 {
				spans[n] = struct{ j, from, to int }{j, len(text), len(text) + len(s)}
				text = append(text, s...)
				n++
			} else {
				fv.SetString(stringValue(v))
			}
		case kindInt:
			n, _ := binary.Varint(v)
			fv.SetInt(n)
		case kindTime:
			*fv.Addr().Interface().(*time.Time) = timeValue(v)
		}
	}
	// The strings share one allocation.
	all := string(text)
	for _, sp := range spans[:n] {
		rv.Field(entryFields[sp.j].index).SetString(all[sp.from:sp.to])
	}
	return e
}

// appendJSON appends the entry's JSON, the bytes c was built from.
func (c compactEntry) appendJSON(dst []byte) []byte {
	dst = append(dst, '{')
	first := true
	fc := c.cursor()
	for j, v, ok := fc.next(); ok; j, v, ok = fc.next() {
		f := &entryFields[j]
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, f.key...)
		switch f.kind {
		case kindString:
			n, w := binary.Uvarint(v)
			dst = append(dst, '"')
			dst = append(dst, v[w:w+int(n)]...)
			dst = append(dst, '"')
		case kindInt:
			n, _ := binary.Varint(v)
			dst = strconv.AppendInt(dst, n, 10)
		case kindTime:
			dst = append(dst, '"')
			if v[0] == tagUTC {
				dst = timeValue(v).AppendFormat(dst, time.RFC3339Nano)
			} else {
				n, w := binary.Uvarint(v[1:])
				dst = append(dst, v[1+w:1+w+int(n)]...)
			}
			dst = append(dst, '"')
		}
	}
	return append(dst, '}')
}
