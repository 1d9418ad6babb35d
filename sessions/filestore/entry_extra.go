package filestore

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/gateway/gateway/sessions"
)

// Members of a stored entry that sessions.Entry does not know (written by
// the reference system or a newer release) are kept through a round trip
// (sessions.Entry.Extra). In a compactEntry they follow the known fields:
// bit extraBit of the field set says they are there, then a uvarint length
// and the members as JSON text without the braces
// (`"thinkingLevel":"high","origin":{...}`), which appendJSON writes after
// the known fields. A line with them is not what json.Marshal writes for an
// Entry, so compactOf declines it and decodeEntry reads it.

// extraBit marks a compactEntry with unknown members; entryFields holds at
// most 63 fields, so it is never a field's bit.
const extraBit = uint64(1) << 63

// knownMembers are the JSON names of sessions.Entry's fields.
var knownMembers = func() map[string]bool {
	m := map[string]bool{}
	for _, f := range entryFields {
		m[f.name] = true
	}
	return m
}()

// decodeEntry decodes one entry's JSON (lenient: in the reference
// system's JSON-era format too, see legacyEntry) and keeps the members
// Entry does not know in Extra, in name order.
func decodeEntry(b []byte, lenient bool) (sessions.Entry, error) {
	var e sessions.Entry
	var dst any = &e
	if lenient {
		dst = (*legacyEntry)(&e)
	}
	if err := json.Unmarshal(b, dst); err != nil {
		return sessions.Entry{}, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return sessions.Entry{}, err
	}
	var unknown []string
	for k := range all {
		if !knownMembers[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return e, nil
	}
	slices.Sort(unknown)
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range unknown {
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		buf.Write(kb)
		buf.WriteByte(':')
		if err := json.Compact(&buf, all[k]); err != nil {
			return sessions.Entry{}, fmt.Errorf("member %q: %w", sessions.Clip(k), err)
		}
	}
	buf.WriteByte('}')
	e.Extra = buf.String()
	return e, nil
}

// extraMembers is the members of the JSON object obj (Entry.Extra)
// without its braces, compacted; nil for an empty object. Known members
// are refused: they would be written twice.
func extraMembers(obj string) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(obj), &m); err != nil {
		return nil, fmt.Errorf("extra members: want a JSON object: %w", err)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		if knownMembers[k] {
			return nil, fmt.Errorf("extra members: %q is a field of the entry", sessions.Clip(k))
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var buf bytes.Buffer
	for i, k := range keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		buf.Write(kb)
		buf.WriteByte(':')
		if err := json.Compact(&buf, m[k]); err != nil {
			return nil, fmt.Errorf("extra member %q: %w", sessions.Clip(k), err)
		}
	}
	return buf.Bytes(), nil
}

// withExtra is c with the unknown members appended.
func withExtra(c compactEntry, members []byte) compactEntry {
	if len(members) == 0 {
		return c
	}
	present, w := binary.Uvarint(c)
	out := binary.AppendUvarint(make(compactEntry, 0, len(c)+len(members)+12), present|extraBit)
	out = append(out, c[w:]...)
	out = binary.AppendUvarint(out, uint64(len(members)))
	return append(out, members...)
}

// extra returns c's unknown members (nil: none); end is where the known
// fields end (a cursor's position after its last field).
func (c compactEntry) extra(end int) []byte {
	if present, _ := binary.Uvarint(c); present&extraBit == 0 {
		return nil
	}
	n, w := binary.Uvarint(c[end:])
	return c[end+w : end+w+int(n)]
}
