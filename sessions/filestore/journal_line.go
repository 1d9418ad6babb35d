package filestore

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// Hand-written encoding of the journal's mark lines (start, fail, abort,
// done, sent: op, id, ids, n, at), written for every message and compacted
// by the thousand: the bytes json.Marshal gives for the same journalLine
// (journal_line_test.go checks it), without reflection. Lines carrying a
// record, a reply or a draft go through json.Marshal.

// appendJournalLine appends l's JSON (without '\n') to dst.
func appendJournalLine(dst []byte, l *journalLine) ([]byte, error) {
	if l.Rec != nil || l.Reply != nil || l.Draft != nil || !simpleTime(l.At) {
		b, err := json.Marshal(l)
		if err != nil {
			return nil, err
		}
		if len(dst) == 0 && cap(dst) < len(b) {
			return b, nil
		}
		return append(dst, b...), nil
	}
	dst = append(dst, `{"op":`...)
	dst = appendHTMLSafeString(dst, l.Op)
	if l.ID != "" {
		dst = append(dst, `,"id":`...)
		dst = appendHTMLSafeString(dst, l.ID)
	}
	if len(l.IDs) > 0 {
		dst = append(dst, `,"ids":[`...)
		for i, id := range l.IDs {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendHTMLSafeString(dst, id)
		}
		dst = append(dst, ']')
	}
	if l.N != 0 {
		dst = append(dst, `,"n":`...)
		dst = strconv.AppendInt(dst, int64(l.N), 10)
	}
	if !l.At.IsZero() {
		dst = append(dst, `,"at":"`...)
		dst = l.At.AppendFormat(dst, time.RFC3339Nano)
		dst = append(dst, '"')
	}
	return append(dst, '}'), nil
}

// simpleTime reports whether t marshals as its RFC 3339 form: a four-digit
// year and a whole-minute offset (Time.MarshalJSON rejects the others).
func simpleTime(t time.Time) bool {
	if y := t.Year(); y < 0 || y > 9999 {
		return false
	}
	_, off := t.Zone()
	return off%60 == 0 && off > -24*3600 && off < 24*3600
}

// appendHTMLSafeString appends s quoted as json.Marshal does, escaping
// <, > and & too. Strings other than plain printable ASCII go through
// json.Marshal.
func appendHTMLSafeString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // a string always encodes
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
