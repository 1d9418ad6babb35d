package filestore

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/gateway/gateway/internal/jsonenc"
	"github.com/gateway/gateway/sessions"
)

// Hand-written encoding of the journal's lines that every message writes
// (accept with its record, start, ready with its reply, sent, done) and
// that compaction rewrites by the thousand: the bytes json.Marshal gives
// for the same journalLine (journal_line_test.go checks it), without
// reflection. Lines carrying a draft, a time json.Marshal rejects, or an
// opaque field (payload, target) that is not already compact go through
// json.Marshal.

// appendJournalLine appends l's JSON (without '\n') to dst.
func appendJournalLine(dst []byte, l *journalLine) ([]byte, error) {
	if l.Draft != nil || !simpleTime(l.At) || (l.Rec != nil && !plainRecord(l.Rec)) || (l.Reply != nil && !plainReply(l.Reply)) {
		b, err := marshalJournalLine(*l)
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
	dst = appendStringField(dst, `,"id":`, l.ID)
	if len(l.IDs) > 0 {
		dst = appendStrings(append(dst, `,"ids":`...), l.IDs)
	}
	dst = appendIntField(dst, `,"n":`, l.N)
	if !l.At.IsZero() {
		dst = appendQuotedTime(append(dst, `,"at":`...), l.At)
	}
	if l.Rec != nil {
		dst = appendRecord(append(dst, `,"rec":`...), l.Rec)
	}
	if l.Reply != nil {
		dst = appendReply(append(dst, `,"reply":`...), l.Reply)
	}
	return append(dst, '}'), nil
}

// marshalJournalLine is json.Marshal of a copy of l: apart, so that only
// the rare line that takes it is copied to the heap, not every line a
// message writes (the caller's line stays on its stack).
func marshalJournalLine(l journalLine) ([]byte, error) { return json.Marshal(&l) }

// plainRecord reports whether appendRecord writes r as json.Marshal does.
func plainRecord(r *sessions.Record) bool {
	return simpleTime(r.AcceptedAt) && plainRaw(r.Payload)
}

// appendRecord appends r's JSON (sessions.Record's tags); r is plain.
func appendRecord(dst []byte, r *sessions.Record) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendHTMLSafeString(dst, r.ID)
	dst = append(dst, `,"agentId":`...)
	dst = appendHTMLSafeString(dst, r.AgentID)
	dst = append(dst, `,"sessionKey":`...)
	dst = appendHTMLSafeString(dst, r.SessionKey)
	dst = appendRaw(append(dst, `,"payload":`...), r.Payload)
	dst = appendIntField(dst, `,"starts":`, r.Starts)
	dst = appendIntField(dst, `,"failures":`, r.Failures)
	dst = appendIntField(dst, `,"attempts":`, r.Attempts)
	if r.Consumed {
		dst = append(dst, `,"consumed":true`...)
	}
	dst = appendQuotedTime(append(dst, `,"acceptedAt":`...), r.AcceptedAt)
	return append(dst, '}')
}

// plainReply reports whether appendReply writes p as json.Marshal does.
func plainReply(p *sessions.Reply) bool {
	return simpleTime(p.CreatedAt) && plainRaw(p.Target)
}

// appendReply appends p's JSON (sessions.Reply's tags); p is plain.
func appendReply(dst []byte, p *sessions.Reply) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendHTMLSafeString(dst, p.ID)
	if len(p.Records) > 0 {
		dst = appendStrings(append(dst, `,"records":`...), p.Records)
	}
	dst = appendStringField(dst, `,"agentId":`, p.AgentID)
	dst = appendStringField(dst, `,"sessionKey":`, p.SessionKey)
	dst = appendRaw(append(dst, `,"target":`...), p.Target)
	dst = append(dst, `,"chunks":`...)
	if p.Chunks == nil {
		dst = append(dst, "null"...)
	} else {
		dst = appendStrings(dst, p.Chunks)
	}
	dst = appendIntField(dst, `,"sent":`, p.Sent)
	dst = appendStringField(dst, `,"entryId":`, p.EntryID)
	dst = appendStringField(dst, `,"draft":`, p.Draft)
	dst = appendQuotedTime(append(dst, `,"createdAt":`...), p.CreatedAt)
	return append(dst, '}')
}

// plainRaw reports whether json.Marshal writes raw (a json.RawMessage)
// unchanged: valid JSON with nothing its compaction removes (whitespace
// outside strings) or its HTML escaping changes (<, >, &, U+2028, U+2029).
// nil is plain (null); empty but not nil is not (json.Marshal rejects it).
func plainRaw(raw json.RawMessage) bool {
	if raw == nil {
		return true
	}
	in, esc := false, false
	for i, c := range raw {
		switch {
		case esc:
			esc = false
		case in && c == '\\':
			esc = true
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\t' || c == '\n' || c == '\r'), c == '<', c == '>', c == '&':
			return false
		case c == 0xE2 && i+2 < len(raw) && raw[i+1] == 0x80 && (raw[i+2] == 0xA8 || raw[i+2] == 0xA9):
			return false
		}
	}
	return json.Valid(raw)
}

// appendRaw appends a plain raw value, null when nil (RawMessage's
// MarshalJSON).
func appendRaw(dst []byte, raw json.RawMessage) []byte {
	if raw == nil {
		return append(dst, "null"...)
	}
	return append(dst, raw...)
}

// appendQuotedTime appends t quoted in RFC 3339 with nanoseconds (Time's
// MarshalJSON for a simpleTime t).
func appendQuotedTime(dst []byte, t time.Time) []byte {
	dst = append(dst, '"')
	dst = t.AppendFormat(dst, time.RFC3339Nano)
	return append(dst, '"')
}

// appendStrings appends ss as a JSON array.
func appendStrings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendHTMLSafeString(dst, s)
	}
	return append(dst, ']')
}

// appendStringField appends key and s unless s is empty (omitempty).
func appendStringField(dst []byte, key, s string) []byte {
	if s == "" {
		return dst
	}
	return appendHTMLSafeString(append(dst, key...), s)
}

// appendIntField appends key and n unless n is 0 (omitempty).
func appendIntField(dst []byte, key string, n int) []byte {
	if n == 0 {
		return dst
	}
	return strconv.AppendInt(append(dst, key...), int64(n), 10)
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
// <, > and & too.
func appendHTMLSafeString(dst []byte, s string) []byte { return jsonenc.AppendStringHTML(dst, s) }

// doneLinePrefix begins a done line as appendJournalLine writes it.
var doneLinePrefix = []byte(`{"op":"done","ids":[`)

// parseDoneLine decodes t, a done line of plain ids as appendJournalLine
// writes it, without encoding/json: a start replays a day of them, half a
// million on a busy bot (issue 21). ok is false for any other line, or an
// id with escapes: the caller decodes those with encoding/json.
func parseDoneLine(t []byte) (l journalLine, ok bool) {
	rest, found := bytes.CutPrefix(t, doneLinePrefix)
	if !found {
		return l, false
	}
	for {
		if len(rest) == 0 || rest[0] != '"' {
			return l, false
		}
		end := bytes.IndexByte(rest[1:], '"')
		if end < 0 {
			return l, false
		}
		id := rest[1 : 1+end]
		if bytes.IndexByte(id, '\\') >= 0 || !utf8.Valid(id) || slices.ContainsFunc(id, func(c byte) bool { return c < 0x20 }) {
			return l, false
		}
		l.IDs = append(l.IDs, string(id))
		rest = rest[end+2:]
		if len(rest) == 0 || rest[0] != ',' {
			break
		}
		rest = rest[1:]
	}
	if rest, found = bytes.CutPrefix(rest, []byte(`]`)); !found {
		return l, false
	}
	if r, found := bytes.CutPrefix(rest, []byte(`,"at":"`)); found {
		end := bytes.IndexByte(r, '"')
		if end < 0 {
			return l, false
		}
		at, err := time.Parse(time.RFC3339Nano, string(r[:end]))
		if err != nil {
			return l, false
		}
		l.At, rest = at, r[end+1:]
	}
	if string(rest) != "}" {
		return l, false
	}
	l.Op = "done"
	return l, true
}

// decodeJournalLine decodes any line with encoding/json.
func decodeJournalLine(t []byte) (journalLine, error) {
	var l journalLine
	err := json.Unmarshal(t, &l)
	return l, err
}
