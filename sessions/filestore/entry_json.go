package filestore

import (
	"encoding/json"
	"fmt"
	"github.com/gateway/gateway/sessions"
	"math"
	"strconv"
	"time"
)

// legacyEntry decodes an index entry in this package's format (RFC 3339
// times) or in the one the reference system's JSON-era releases wrote:
// createdAt, updatedAt, sessionStartedAt and lastInteractionAt as numbers
// of milliseconds since the epoch. An index is decoded this way only when
// the plain decoding fails (it costs twice as much), and is always written
// back in this package's format.
type legacyEntry sessions.Entry

func (e *legacyEntry) UnmarshalJSON(b []byte) error {
	type plain sessions.Entry // no methods: no recursion
	w := struct {
		*plain
		CreatedAt         flexTime `json:"createdAt"`
		SessionStartedAt  flexTime `json:"sessionStartedAt"`
		LastInteractionAt flexTime `json:"lastInteractionAt"`
		UpdatedAt         flexTime `json:"updatedAt"`
	}{plain: (*plain)(e), CreatedAt: flexTime(e.CreatedAt), SessionStartedAt: flexTime(e.SessionStartedAt),
		LastInteractionAt: flexTime(e.LastInteractionAt), UpdatedAt: flexTime(e.UpdatedAt)}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	e.CreatedAt, e.SessionStartedAt = time.Time(w.CreatedAt), time.Time(w.SessionStartedAt)
	e.LastInteractionAt, e.UpdatedAt = time.Time(w.LastInteractionAt), time.Time(w.UpdatedAt)
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
