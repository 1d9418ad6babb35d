package filestore

import (
	"bytes"
	"encoding"
	"encoding/binary"
	"encoding/json"
	"fmt"
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
// tagText the uvarint length and the RFC 3339 text of any other; an object
// (a struct of strings, such as deliveryContext) as a uvarint length and
// its JSON text as json.Marshal writes it.
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
	kindObject
)

// entryField is one field of sessions.Entry as json.Marshal writes it.
type entryField struct {
	name      string
	key       []byte // `"name":`
	kind      fieldKind
	index     int  // in sessions.Entry
	bits      int  // an integer's size
	omitEmpty bool // absent when zero
	// members are an object's fields, in the order json.Marshal writes
	// them: strings, each absent when empty.
	members []objectMember
}

// objectMember is one string field of an object field.
type objectMember struct {
	name  string
	key   []byte // `"name":`
	index int    // in the object's struct
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
	// The fields a delta changes besides those above (patchDelta).
	fieldInputTokens   = fieldIndex("inputTokens")
	fieldOutputTokens  = fieldIndex("outputTokens")
	fieldTotalTokens   = fieldIndex("totalTokens")
	fieldContextTokens = fieldIndex("contextTokens")
	fieldModel         = fieldIndex("model")
	fieldProvider      = fieldIndex("provider")
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
		isObject := f.Type.Kind() == reflect.Struct && f.Type != timeType
		if f.Anonymous || (opts != "" && opts != "omitempty" && !(isObject && opts == "omitzero")) {
			unsupported("embedded, or a json option other than omitempty (omitzero for a struct)")
		}
		ef := entryField{name: name, key: []byte(strconv.Quote(name) + ":"), index: i, omitEmpty: opts != ""}
		switch {
		case isObject:
			if opts != "omitzero" {
				unsupported("a struct without omitzero")
			}
			ef.kind, ef.members = kindObject, objectMembersOf(f.Type, unsupported)
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
	if len(out) > 63 {
		panic(fmt.Sprintf("filestore: %s has %d fields; a compactEntry holds 63 (bit 63 is extraBit)", t, len(out)))
	}
	return out
}

// objectMembersOf lists the fields of the struct t of an object field:
// strings with omitempty only, which is all an object's compact form holds.
func objectMembersOf(t reflect.Type, unsupported func(string)) []objectMember {
	var out []objectMember
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" && opts == "" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if f.Anonymous || opts != "omitempty" || f.Type.Kind() != reflect.String {
			unsupported("member " + f.Name + " of an object is not a string with omitempty")
		}
		out = append(out, objectMember{name: name, key: []byte(strconv.Quote(name) + ":"), index: i})
	}
	if len(out) == 0 {
		unsupported("an object without members")
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
	c, ok := packDirect(e)
	if !ok {
		var err error
		if c, err = packJSON(e); err != nil {
			return nil, err
		}
	}
	if e.Extra == "" {
		return c, nil
	}
	x, err := extraMembers(e.Extra)
	if err != nil {
		return nil, fmt.Errorf("sessions: encode entry %q: %w", sessions.Clip(e.SessionKey), err)
	}
	return withExtra(c, x), nil
}

// packDirect packs e without encoding it; ok is false when it has a field
// that needs encoding/json's word (a string it escapes or that is not
// valid UTF-8, a time it would not write and read back the same).
func packDirect(e *sessions.Entry) (_ compactEntry, ok bool) {
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
		case kindObject:
			if fv.IsZero() {
				continue
			}
			var obj []byte
			if obj, ok = appendObject(obj, f, fv); !ok {
				return nil, false
			}
			body = binary.AppendUvarint(body, uint64(len(obj)))
			body = append(body, obj...)
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

// appendObject appends the JSON json.Marshal writes for the object field
// f's value fv (not zero); ok is false when one of its strings needs
// encoding/json's word.
func appendObject(dst []byte, f *entryField, fv reflect.Value) ([]byte, bool) {
	dst = append(dst, '{')
	first := true
	for _, m := range f.members {
		s := fv.Field(m.index).String()
		if s == "" {
			continue
		}
		if !writtenAsIs(s) {
			return nil, false
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, m.key...)
		dst = append(dst, '"')
		dst = append(dst, s...)
		dst = append(dst, '"')
	}
	return append(dst, '}'), true
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
