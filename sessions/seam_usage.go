package sessions

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gateway/gateway/routing"
)

// UsageLog is the usage ledger (issue 14): one row per agent turn with its
// tokens and cost, queried grouped by sender, session, room, model, day or
// agent. The files backend keeps it in <stateDir>/usage (filestore.UsageLog), the
// PostgreSQL backend in its usage table. Implementations are safe for
// concurrent use by goroutines and processes.
type UsageLog interface {
	// Record adds rows (each must pass CheckUsageRow). A row whose agent
	// and Ref are recorded already may be stored again by the files backend
	// and is ignored by PostgreSQL; usagereport.Rebuild asks Refs first, a
	// live turn's answer is new.
	Record(ctx context.Context, rows ...UsageRow) error
	// Query sums the rows f selects into buckets of f.By, sorted by
	// SortUsage.
	Query(ctx context.Context, f UsageFilter) ([]UsageBucket, error)
	// Refs returns the Ref of every row of agentID.
	Refs(ctx context.Context, agentID string) (map[UsageRef]bool, error)
	// Rows calls fn with each row f selects (f.By ignored), grouped by
	// agent, in no other guaranteed order (transfer.CopyUsage, `gateway storage
	// migrate`); fn's error stops it.
	Rows(ctx context.Context, f UsageFilter, fn func(UsageRow) error) error
}

// UsageRow is one agent turn's usage: the sum of the turn's assistant
// messages (several with tool calls), attributed to the model that gave
// the final answer.
type UsageRow struct {
	// At is the time of the turn's last assistant message (its transcript
	// timestamp, in milliseconds): with the session id it names the turn.
	At         time.Time `json:"at"`
	AgentID    string    `json:"agent"`
	SessionKey string    `json:"sessionKey"`
	SessionID  string    `json:"sessionId"`
	// EntryID is the transcript entry of the turn's last assistant message.
	EntryID string `json:"entryId"`
	// Channel and Room say where the turn's input came from: the channel
	// and its chat (channel:chat[:thread]), "" for internal turns.
	Channel string `json:"channel,omitempty"`
	Room    string `json:"room,omitempty"`
	// SenderID and SenderName are the sender of the turn's last input
	// ("" when internal or rebuilt from a transcript without one).
	SenderID   string  `json:"senderId,omitempty"`
	SenderName string  `json:"senderName,omitempty"`
	Provider   string  `json:"provider"`
	Model      string  `json:"model"`
	Input      int64   `json:"input"`
	Output     int64   `json:"output"`
	CacheRead  int64   `json:"cacheRead"`
	CacheWrite int64   `json:"cacheWrite"`
	Cost       float64 `json:"cost"` // USD
}

// UsageRef names a turn: its session and the time of its last assistant
// message in Unix milliseconds, as the transcript stores it (rows rebuilt
// from a transcript have no entry id of their own to match).
type UsageRef struct {
	SessionID string
	At        int64
}

// Ref is r's UsageRef.
func (r UsageRow) Ref() UsageRef { return UsageRef{r.SessionID, r.At.UnixMilli()} }

// SenderKey is the sender a row is grouped under: "channel:senderId", or
// "" when the turn had no sender.
func (r UsageRow) SenderKey() string {
	if r.SenderID == "" {
		return ""
	}
	return r.Channel + ":" + r.SenderID
}

// Usage grouping dimensions (UsageFilter.By).
const (
	UsageByTotal   = ""
	UsageBySender  = "sender"
	UsageBySession = "session"
	UsageByRoom    = "room"
	UsageByModel   = "model"
	UsageByDay     = "day"
	UsageByAgent   = "agent"
)

// UsageDimensions are the values UsageFilter.By takes besides "" (one
// bucket, the total).
var UsageDimensions = []string{UsageBySender, UsageBySession, UsageByRoom, UsageByModel, UsageByDay, UsageByAgent}

// UsageFilter selects rows and how they are grouped. Empty fields select
// everything.
type UsageFilter struct {
	AgentID    string
	SessionKey string
	// Channel and SenderID select one sender's rows (both needed).
	Channel  string
	SenderID string
	// Since and Until bound At: Since <= At < Until (zero: unbounded).
	Since, Until time.Time
	By           string
}

// UsageBucket is the sum of the rows of one group. Key is the group's value
// (a sender key, session key, room, "provider/model", a UTC day
// "2006-01-02", an agent id; "total" with By ""); Label is a name to show
// beside it (the sender's latest name).
type UsageBucket struct {
	Key        string  `json:"key"`
	Label      string  `json:"label,omitempty"`
	Turns      int64   `json:"turns"`
	Input      int64   `json:"input"`
	Output     int64   `json:"output"`
	CacheRead  int64   `json:"cacheRead"`
	CacheWrite int64   `json:"cacheWrite"`
	Cost       float64 `json:"cost"`
}

// Tokens is the bucket's token count of every kind.
func (b UsageBucket) Tokens() int64 { return b.Input + b.Output + b.CacheRead + b.CacheWrite }

// Add adds r to b.
func (b *UsageBucket) Add(r UsageRow) {
	b.Turns++
	b.Input += r.Input
	b.Output += r.Output
	b.CacheRead += r.CacheRead
	b.CacheWrite += r.CacheWrite
	b.Cost += r.Cost
}

// maxUsageField bounds every text field of a row, in bytes.
const maxUsageField = 512

// CheckUsageRow refuses a row a backend must not store; the error names
// the field.
func CheckUsageRow(r UsageRow) error {
	if !routing.ValidID(r.AgentID) {
		return fmt.Errorf("usage row: agent %q: not a valid agent id", r.AgentID)
	}
	if r.At.IsZero() {
		return fmt.Errorf("usage row: at: missing time")
	}
	if !r.At.Equal(time.UnixMilli(r.At.UnixMilli())) {
		return fmt.Errorf("usage row: at %s: finer than a millisecond (transcript times are milliseconds)", r.At.Format(time.RFC3339Nano))
	}
	for _, f := range []struct{ name, v string }{
		{"sessionKey", r.SessionKey}, {"sessionId", r.SessionID}, {"entryId", r.EntryID},
		{"channel", r.Channel}, {"room", r.Room}, {"senderId", r.SenderID}, {"senderName", r.SenderName},
		{"provider", r.Provider}, {"model", r.Model},
	} {
		if len(f.v) > maxUsageField || strings.IndexByte(f.v, 0) >= 0 || !utf8.ValidString(f.v) {
			return fmt.Errorf("usage row: %s: longer than %d bytes, not UTF-8 or holding NUL", f.name, maxUsageField)
		}
	}
	if r.SessionID == "" {
		return fmt.Errorf("usage row: sessionId: empty")
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"input", r.Input}, {"output", r.Output}, {"cacheRead", r.CacheRead}, {"cacheWrite", r.CacheWrite}} {
		if f.v < 0 {
			return fmt.Errorf("usage row: %s %d: negative token count", f.name, f.v)
		}
	}
	if r.Cost < 0 || math.IsNaN(r.Cost) || math.IsInf(r.Cost, 0) {
		return fmt.Errorf("usage row: cost %v: must be a finite non-negative number", r.Cost)
	}
	return nil
}

// CheckUsageFilter refuses a filter no backend can answer; the error names
// the field.
func CheckUsageFilter(f UsageFilter) error {
	if f.AgentID != "" && !routing.ValidID(f.AgentID) {
		return fmt.Errorf("usage filter: agent %q: not a valid agent id", f.AgentID)
	}
	if f.By != UsageByTotal && !slices.Contains(UsageDimensions, f.By) {
		return fmt.Errorf("usage filter: by %q: want one of %s", f.By, strings.Join(UsageDimensions, ", "))
	}
	if (f.Channel == "") != (f.SenderID == "") {
		return fmt.Errorf("usage filter: a sender needs both channel and sender id")
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return fmt.Errorf("usage filter: since %s is not before until %s", f.Since.Format(time.RFC3339), f.Until.Format(time.RFC3339))
	}
	return nil
}

// Selects reports whether f selects r (By aside).
func (f UsageFilter) Selects(r UsageRow) bool {
	switch {
	case f.AgentID != "" && r.AgentID != f.AgentID,
		f.SessionKey != "" && r.SessionKey != f.SessionKey,
		f.SenderID != "" && (r.SenderID != f.SenderID || r.Channel != f.Channel),
		!f.Since.IsZero() && r.At.Before(f.Since),
		!f.Until.IsZero() && !r.At.Before(f.Until):
		return false
	}
	return true
}

// SortUsage orders buckets as every backend returns them: by day
// ascending, any other dimension by cost, then tokens, descending, ties by
// key.
func SortUsage(by string, bs []UsageBucket) {
	slices.SortFunc(bs, func(a, b UsageBucket) int {
		if by != UsageByDay {
			if a.Cost != b.Cost {
				if a.Cost > b.Cost {
					return -1
				}
				return 1
			}
			if a.Tokens() != b.Tokens() {
				if a.Tokens() > b.Tokens() {
					return -1
				}
				return 1
			}
		}
		return strings.Compare(a.Key, b.Key)
	})
}
