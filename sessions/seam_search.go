package sessions

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions/searchtext"
)

// Transcript search (issue 14) behind the storage seam. The files backend
// keeps its own inverted index under <stateDir>/search (search_*.go); the
// PostgreSQL backend uses a tsvector column of the same words
// (searchtext.Tokens; pgstore/search.go). Both
// search the text of the user and assistant messages (not tool results) of every
// agent's current sessions: a reset, /delete or maintenance archive takes a
// session's messages out of the results at once; /switch brings them back.

// Search limits.
const (
	// DefaultSearchLimit is the number of hits when SearchQuery.Limit is 0.
	DefaultSearchLimit = 20
	// MaxSearchLimit bounds SearchQuery.Limit.
	MaxSearchLimit = 200
	// MaxSearchQuery bounds the query text, in bytes.
	MaxSearchQuery = 512
)

// ErrBadQuery is wrapped by the errors of a query that cannot run (empty,
// too long, a bad filter): the caller's fault, HTTP 400.
var ErrBadQuery = errors.New("bad search query")

// Searcher searches the transcripts. It is safe for concurrent use.
type Searcher interface {
	// Search returns the message entries matching every word of q.Text
	// (case-insensitive, whole words), newest first (by the message's
	// timestamp), at most q.Limit. An invalid query is an error wrapping
	// ErrBadQuery.
	Search(ctx context.Context, q SearchQuery) ([]SearchHit, error)
}

// SearchQuery is one search.
type SearchQuery struct {
	// Text holds the words to find (all of them).
	Text string
	// Agents restricts the search to these agents; empty is every agent.
	Agents []string
	// Room restricts it to one room (see RoomMatcher); "" is every room.
	Room string
	// Since drops messages older than it (zero: no bound).
	Since time.Time
	// Limit is the number of hits (0: DefaultSearchLimit; at most
	// MaxSearchLimit).
	Limit int
}

// SearchHit is one matching message.
type SearchHit struct {
	Agent      string    `json:"agent"`
	SessionKey string    `json:"sessionKey"`
	SessionID  string    `json:"sessionId"`
	EntryID    string    `json:"entryId"`
	Role       string    `json:"role"`
	At         time.Time `json:"at"`
	// Snippet is the text around the first match, as searchtext.Snippet
	// cuts it (about searchtext.SnippetRunes runes, "…" where it was cut).
	Snippet string `json:"snippet"`
}

// Normalize validates q and fills its defaults; errors wrap ErrBadQuery
// and name what is wrong.
func (q SearchQuery) Normalize() (SearchQuery, error) {
	q.Text = strings.TrimSpace(q.Text)
	switch {
	case q.Text == "":
		return q, fmt.Errorf("%w: empty query", ErrBadQuery)
	case len(q.Text) > MaxSearchQuery:
		return q, fmt.Errorf("%w: query is %d bytes, at most %d", ErrBadQuery, len(q.Text), MaxSearchQuery)
	case !utf8.ValidString(q.Text) || strings.ContainsRune(q.Text, 0):
		return q, fmt.Errorf("%w: query is not valid UTF-8 text", ErrBadQuery)
	case q.Limit < 0 || q.Limit > MaxSearchLimit:
		return q, fmt.Errorf("%w: limit %d: want 1..%d", ErrBadQuery, q.Limit, MaxSearchLimit)
	case len(searchtext.Tokens(q.Text)) == 0:
		return q, fmt.Errorf("%w: %q has no words to search for", ErrBadQuery, q.Text)
	}
	if q.Limit == 0 {
		q.Limit = DefaultSearchLimit
	}
	for _, a := range q.Agents {
		if !routing.ValidID(a) {
			return q, fmt.Errorf("%w: agent %q is not a valid agent id", ErrBadQuery, Clip(a))
		}
	}
	if _, err := RoomMatcher(q.Room); err != nil {
		return q, err
	}
	return q, nil
}

// RoomMatcher returns the test of SearchQuery.Room against a session key.
// A room is a session key (the session and its threads or topics match:
// keys whose parent is it) or a bare peer id such as a Telegram chat id
// "-100123" (every session of that peer, on any channel, thread or
// topic). "" matches everything.
func RoomMatcher(room string) (func(sessionKey string) bool, error) {
	room = strings.TrimSpace(room)
	if room == "" {
		return func(string) bool { return true }, nil
	}
	if len(room) > 256 || strings.ContainsRune(room, 0) {
		return nil, fmt.Errorf("%w: room %q is not a session key or a peer id", ErrBadQuery, Clip(room))
	}
	if k, err := routing.Parse(room); err == nil {
		want := k.String()
		return func(s string) bool {
			if !strings.HasPrefix(s, want) { // a thread's key extends its parent's: skip the parse
				return false
			}
			got, err := routing.Parse(s)
			return err == nil && (got.String() == want || got.Parent().String() == want)
		}, nil
	}
	if strings.ContainsAny(room, ":/\\") {
		return nil, fmt.Errorf("%w: room %q is not a session key or a peer id", ErrBadQuery, Clip(room))
	}
	return func(s string) bool {
		if !strings.Contains(s, room) {
			return false
		}
		got, err := routing.Parse(s)
		return err == nil && got.Peer == room
	}, nil
}

// ParseSince reads a --since / since= value: a duration back from now
// ("90m", "24h", "7d"), a date ("2026-11-01", UTC midnight) or an RFC 3339
// time. Errors wrap ErrBadQuery.
func ParseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 0 && n <= 36500 {
			return now.AddDate(0, 0, -n), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%w: since %q: want a duration (24h, 7d), a date (2026-11-01) or an RFC 3339 time", ErrBadQuery, Clip(s))
}
