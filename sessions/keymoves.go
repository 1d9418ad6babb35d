package sessions

import (
	"context"
	"fmt"

	"github.com/gateway/gateway/routing"
)

// Moved session keys. A chat that moved to a new id (a Telegram group
// upgraded to a supergroup) has its session moved to the new chat's key
// (Index.RenameKey), and the move is recorded in Cursors under
// KeyMovesScope, name the old key and value the new one, so that work and
// data still naming the old key find the session: the dispatcher's
// journaled work, and a backend's repair that rebuilds entries from the
// transcripts, whose headers keep the key the session started under.

// KeyMovesScope is the Cursors scope of the recorded key moves.
const KeyMovesScope = "session-key-moves"

// MaxKeyMoveHops bounds the chain of moves KeyMoves.Resolve follows (a
// group moved, its supergroup moved again); a loop in stored data ends
// there.
const MaxKeyMoveHops = 4

// KeyMoves are the recorded moves: old key → new key, both canonical.
type KeyMoves map[routing.Key]routing.Key

// ParseKeyMoves reads the cursors of KeyMovesScope. Pairs that do not
// parse are left out and returned as bad (their old key), for the caller
// to report.
func ParseKeyMoves(all map[string]string) (m KeyMoves, bad []string) {
	m = KeyMoves{}
	for from, to := range all {
		f, err1 := routing.Parse(from)
		t, err2 := routing.Parse(to)
		if err1 != nil || err2 != nil {
			bad = append(bad, from)
			continue
		}
		m[f.Canonical()] = t.Canonical()
	}
	return m, bad
}

// ReadKeyMoves reads the recorded moves from c (bad pairs as in
// ParseKeyMoves).
func ReadKeyMoves(ctx context.Context, c Cursors) (KeyMoves, []string, error) {
	all, err := c.CursorsOf(ctx, KeyMovesScope)
	if err != nil {
		return nil, nil, fmt.Errorf("sessions: read key moves: %w", err)
	}
	m, bad := ParseKeyMoves(all)
	return m, bad, nil
}

// Resolve returns the key k's session is under now: k, or where it moved.
func (m KeyMoves) Resolve(k routing.Key) routing.Key {
	for range MaxKeyMoveHops {
		n, ok := m[k.Canonical()]
		if !ok {
			break
		}
		k = n
	}
	return k
}
