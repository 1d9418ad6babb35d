package filestore

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"reflect"
	"strconv"
	"time"

	"github.com/gateway/gateway/sessions"
)

// Reading a compactEntry: its fields one by one, the whole entry, and its
// JSON as json.Marshal writes it.

// fieldCursor walks the present fields of a compactEntry in order.
type fieldCursor struct {
	c       compactEntry
	present uint64
	i, j    int // position in c; next field of entryFields
}

func (c compactEntry) cursor() fieldCursor {
	present, i := binary.Uvarint(c)
	return fieldCursor{c: c, present: present &^ extraBit, i: i}
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
	case kindString, kindObject:
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
		case kindObject:
			setObject(fv, f, v)
		case kindTime:
			*fv.Addr().Interface().(*time.Time) = timeValue(v)
		}
	}
	// The strings share one allocation.
	all := string(text)
	for _, sp := range spans[:n] {
		rv.Field(entryFields[sp.j].index).SetString(all[sp.from:sp.to])
	}
	if x := c.extra(fc.i); x != nil {
		e.Extra = "{" + string(x) + "}"
	}
	return e
}

// setObject decodes the encoded object field v of f into fv.
func setObject(fv reflect.Value, f *entryField, v []byte) {
	n, w := binary.Uvarint(v)
	obj := v[w : w+int(n)]
	canonicalObject(obj, 0, f.members, func(k int, s []byte) { // checked by compactOf
		out := string(s)
		if bytes.IndexByte(s, '\\') >= 0 {
			_ = json.Unmarshal(quoted(s), &out)
		}
		fv.Field(f.members[k].index).SetString(out)
	})
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
		case kindObject:
			n, w := binary.Uvarint(v)
			dst = append(dst, v[w:w+int(n)]...)
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
	if x := c.extra(fc.i); x != nil {
		if !first {
			dst = append(dst, ',')
		}
		dst = append(dst, x...)
	}
	return append(dst, '}')
}
