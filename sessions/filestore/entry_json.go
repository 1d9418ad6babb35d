package filestore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/gateway/gateway/sessions"
)

// legacyEntry decodes an index entry in this package's format (RFC 3339
// times) or in the one the reference system's JSON-era releases wrote:
// createdAt, updatedAt, sessionStartedAt and lastInteractionAt as numbers
// of milliseconds since the epoch. An index is decoded this way only when
// the plain decoding fails (it costs twice as much), and is always written
// back in this package's format. Those releases keep only updatedAt: a
// clock they lack starts at it (createdAt, sessionStartedAt,
// lastInteractionAt), and lastThreadId and deliveryContext.threadId may be
// a number (a Telegram topic).
type legacyEntry sessions.Entry

func (e *legacyEntry) UnmarshalJSON(b []byte) error {
	type plain sessions.Entry // no methods: no recursion
	w := struct {
		*plain
		CreatedAt         flexTime   `json:"createdAt"`
		SessionStartedAt  flexTime   `json:"sessionStartedAt"`
		LastInteractionAt flexTime   `json:"lastInteractionAt"`
		UpdatedAt         flexTime   `json:"updatedAt"`
		LastThreadID      flexString `json:"lastThreadId"`
		DeliveryContext   *struct {
			Channel   string     `json:"channel"`
			To        string     `json:"to"`
			AccountID string     `json:"accountId"`
			ThreadID  flexString `json:"threadId"`
		} `json:"deliveryContext"`
	}{plain: (*plain)(e), CreatedAt: flexTime(e.CreatedAt), SessionStartedAt: flexTime(e.SessionStartedAt),
		LastInteractionAt: flexTime(e.LastInteractionAt), UpdatedAt: flexTime(e.UpdatedAt), LastThreadID: flexString(e.LastThreadID)}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	e.CreatedAt, e.SessionStartedAt = time.Time(w.CreatedAt), time.Time(w.SessionStartedAt)
	e.LastInteractionAt, e.UpdatedAt = time.Time(w.LastInteractionAt), time.Time(w.UpdatedAt)
	e.LastThreadID = string(w.LastThreadID)
	if d := w.DeliveryContext; d != nil {
		e.DeliveryContext = sessions.DeliveryContext{Channel: d.Channel, To: d.To, AccountID: d.AccountID, ThreadID: string(d.ThreadID)}
	}
	for _, t := range []*time.Time{&e.CreatedAt, &e.SessionStartedAt, &e.LastInteractionAt} {
		if t.IsZero() {
			*t = e.UpdatedAt
		}
	}
	return nil
}

// flexString is a string written as a JSON string or a number.
type flexString string

func (s *flexString) UnmarshalJSON(b []byte) error {
	switch {
	case string(b) == "null":
		return nil
	case len(b) > 0 && b[0] == '"':
		return json.Unmarshal(b, (*string)(s))
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("want a string or a number, got %s", sessions.Clip(string(b)))
	}
	*s = flexString(n.String())
	return nil
}

// flexTime is a time written as an RFC 3339 string or as milliseconds
// since the epoch (an integer or a float); null leaves it unchanged.
type flexTime time.Time

// maxEpochMs bounds accepted millisecond values to years 0001–9999.
const maxEpochMs = 253402300799999

func (t *flexTime) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	if b[0] == '"' {
		return (*time.Time)(t).UnmarshalJSON(b)
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(f) || math.Abs(f) > maxEpochMs {
		return fmt.Errorf("time %s: want an RFC 3339 string or milliseconds since the epoch", sessions.Clip(string(b)))
	}
	ms := int64(f)
	*t = flexTime(time.UnixMilli(ms).Add(time.Duration((f - float64(ms)) * float64(time.Millisecond))).UTC())
	return nil
}

// ErrSeed000Index is the error of an index in the layout of the first
// design document (seed 000): {"sessions": {<id>: {id, agentId, filePath,
// title, messageCount, createdAt, lastAt, tokenEstimate}}}, keyed by
// session ids that are not UUIDs, with transcripts in another format. It
// is refused rather than read as one phantom entry named "sessions";
// doctor reports it (sessions.CodeIndexForeign) and leaves it as it is.
var ErrSeed000Index = errors.New(`a seed-000 index ({"sessions": {<id>: {…, "lastAt", "tokenEstimate"}}}), which this version does not read: ` +
	`its sessions are keyed by ids that are not UUIDs and its transcripts are in another format; move sessions.json and its ses-*.jsonl files aside to start this agent afresh`)

// isSeed000 says whether raw, the value of a top-level member "sessions",
// is seed 000's map of sessions rather than an entry: an object whose
// members are all objects (an entry's members are strings and numbers).
func isSeed000(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || len(m) == 0 {
		return false
	}
	for _, v := range m {
		if v = bytes.TrimSpace(v); len(v) == 0 || v[0] != '{' {
			return false
		}
	}
	return true
}

// keySlot copies an entry's map key k into its sessionKey when that is
// empty (the reference system keeps the key only as the map key). The
// index readers call it on each entry as they read it: no second pass
// over a million entries.
func keySlot(k string, sl slot) (slot, error) {
	if v, ok := sl.c.field(fieldSessionKey); ok && len(v) > 0 && v[0] != 0 {
		return sl, nil // a key of length > 0 (no copy of it to see that)
	}
	e := sl.entry()
	e.SessionKey = k
	c, err := packEntry(&e)
	if err != nil {
		return sl, fmt.Errorf("entry %q: %w", sessions.Clip(k), err)
	}
	n := newSlot(c)
	n.repair = sl.repair
	return n, nil
}

// DecodeEntry decodes one index entry of key as an index holds it: in this
// package's format or in the reference system's (legacyEntry: clocks in
// epoch milliseconds, only updatedAt, the key only outside the entry),
// the members Entry does not know kept in Extra. The importer of the
// reference system's SQLite state (internal/openclaw), whose session rows
// hold the same entry JSON as its JSON-era index, reads them with it, so
// both layouts are read by one decoder.
func DecodeEntry(key string, b []byte) (sessions.Entry, error) {
	e, err := decodeEntry(b, true)
	if err != nil {
		return sessions.Entry{}, fmt.Errorf("sessions: decode entry %q: %w", sessions.Clip(key), err)
	}
	if e.SessionKey == "" {
		e.SessionKey = key
	}
	return e, nil
}
