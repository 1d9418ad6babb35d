package filestore

import (
	"bytes"
	"encoding/binary"
	"time"
)

// A routine delta (counters, the times, the model) is applied to a
// compactEntry without decoding it: the fields it touches are re-encoded
// and every other field's bytes are copied. The compact form is canonical
// (one entry, one encoding: see compactEntry), so this gives the bytes
// packEntry gives for the decoded entry after delta.apply
// (TestPatchDeltaMatchesApply). A delta the patch does not cover (an
// origin, a model or provider json.Marshal would escape, a time it would
// not write in the compact form's common way) takes the decoded path.

// What patchDelta does with a field.
const (
	roleCopy = iota
	roleSession
	roleInt
	roleString
	roleTime
)

// patchRoles are patchDelta's role for each field of entryFields;
// patchLast is the last field it does not copy.
var patchRoles, patchLast = func() (r [64]uint8, last int) {
	for _, j := range []int{fieldInputTokens, fieldOutputTokens, fieldTotalTokens, fieldMessageCount,
		fieldContextTokens, fieldCompactionOffset} {
		r[j] = roleInt
	}
	r[fieldSessionID] = roleSession
	r[fieldModel], r[fieldProvider] = roleString, roleString
	r[fieldUpdatedAt], r[fieldLastInteractionAt] = roleTime, roleTime
	for j, role := range r {
		if role != roleCopy {
			last = j
		}
	}
	return r, last
}()

// patchDelta returns c with d applied, as packEntry gives the entry
// c.entry() after d.apply. applied is false when c is not the session d
// was recorded for (d.apply would refuse it); ok is false when d needs the
// decoded entry.
func patchDelta(c compactEntry, d *delta) (out compactEntry, applied, ok bool) {
	if d.origin != nil || !writtenAsIs(d.model) || !writtenAsIs(d.provider) {
		return nil, false, false
	}
	var buf [512]byte
	body := buf[:binary.MaxVarintLen64]
	fc := c.cursor()
	present := fc.present
	run := fc.i // the start of the fields copied as they are
	for j := 0; j <= patchLast; j++ {
		bit := uint64(1) << j
		role := patchRoles[j]
		if role == roleCopy {
			if present&bit != 0 {
				fc.next()
			}
			continue
		}
		body = append(body, c[run:fc.i]...)
		var v []byte
		if present&bit != 0 {
			_, v, _ = fc.next()
		}
		run = fc.i
		switch role {
		case roleSession:
			if !encodedString(v, d.sessionID) {
				return nil, false, true
			}
			body = append(body, v...)
		case roleInt:
			n := intValue(v)
			switch j {
			case fieldInputTokens:
				n += d.in
			case fieldOutputTokens:
				n += d.out
			case fieldTotalTokens:
				n += d.total
			case fieldMessageCount:
				n += int64(d.msgs)
			case fieldContextTokens:
				if d.ctxTokens > 0 {
					n = d.ctxTokens
				}
			case fieldCompactionOffset:
				n = max(n, d.compaction)
			}
			f := &entryFields[j]
			if f.bits < 64 {
				n = n << (64 - f.bits) >> (64 - f.bits) // wraps as the field's int type does
			}
			if n == 0 && f.omitEmpty {
				present &^= bit
				continue
			}
			body = binary.AppendVarint(body, n)
		case roleString:
			s := d.model
			if j == fieldProvider {
				s = d.provider
			}
			if s == "" || encodedString(v, s) {
				body = append(body, v...) // unchanged (absent: nothing)
				continue
			}
			body = binary.AppendUvarint(body, uint64(len(s)))
			body = append(body, s...)
		case roleTime:
			t := d.updatedAt
			if j == fieldLastInteractionAt {
				t = d.lastInteraction
			}
			if !t.After(timeValue(v)) {
				body = append(body, v...)
				continue
			}
			if body, ok = appendTime(body, t); !ok {
				return nil, false, false
			}
		}
		present |= bit
	}
	body = append(body, c[run:]...) // the fields after patchLast, the unknown members
	var hdr [binary.MaxVarintLen64]byte
	n := binary.PutUvarint(hdr[:], present|c.header()&extraBit)
	start := binary.MaxVarintLen64 - n
	copy(body[start:], hdr[:n])
	return append(compactEntry(nil), body[start:]...), true, true
}

// header is c's field set, with extraBit.
func (c compactEntry) header() uint64 {
	present, _ := binary.Uvarint(c)
	return present
}

// encodedString says whether the encoded string field v (nil: absent,
// the empty string) holds s.
func encodedString(v []byte, s string) bool {
	if v == nil {
		return s == ""
	}
	n, w := binary.Uvarint(v)
	raw := v[w : w+int(n)]
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw) == s
	}
	return stringValue(v) == s
}

// intValue decodes an encoded integer field (nil: absent, zero).
func intValue(v []byte) int64 {
	if v == nil {
		return 0
	}
	n, _ := binary.Varint(v)
	return n
}

// appendTime appends the encoded time field t as packDirect encodes it;
// ok is false when packDirect would leave t to encoding/json.
func appendTime(dst []byte, t time.Time) ([]byte, bool) {
	if _, offset := t.Zone(); offset == 0 && t.Year() >= 0 && t.Year() <= 9999 {
		dst = append(dst, tagUTC)
		dst = binary.AppendVarint(dst, t.Unix())
		return binary.AppendUvarint(dst, uint64(t.Nanosecond())), true
	}
	q, err := t.MarshalJSON()
	if err != nil || !readsBack(q) {
		return nil, false
	}
	dst = append(dst, tagText)
	dst = binary.AppendUvarint(dst, uint64(len(q)-2))
	return append(dst, q[1:len(q)-1]...), true
}
