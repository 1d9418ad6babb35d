package pgstore

import (
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/gateway/gateway/sessions"
)

// The queue settings of a record's session read by its accept
// (sessions.QueuePeek, issue 21): the dispatcher needs them to queue the
// message and, without them cached, read the entry in a round trip of its
// own right after the accept's — for every message of a chat quieter than
// its cache (30 s), and for a session's first message on each replica.
// The accept's statement reads them instead, from the row it would read.

// acceptPeekSQL is acceptSQL that also returns the queue settings of the
// record's session ($2 agent, $3 key): always one row, seq NULL when the
// id is known, the entry's columns NULL when the key has none.
const acceptPeekSQL = `WITH ins AS (` + acceptSQL + `)
	SELECT (SELECT seq FROM ins), e.session_id, e.queue_mode, e.queue_debounce_ms, e.queue_cap, e.queue_drop
	FROM (VALUES (1)) AS one (x) LEFT JOIN entries e ON e.agent_id = $2 AND e.session_key = $3`

// peeked is what acceptPeekSQL read for record id of agent agentID.
type peeked struct {
	id, agentID string
	entry       sessions.Entry
	found       bool
}

// queueAccept queues the accept of record id (args: acceptSQL's) into b;
// dup reports a known id. With peek wanting the record's settings, the
// statement reads them too and *into holds them (reset first: a fill runs
// once per try).
func queueAccept(b *pgx.Batch, peek *sessions.QueuePeek, rec sessions.Record, args []any, dup *bool, into *[]peeked) {
	*dup = false
	if peek == nil || peek.Want == nil || !peek.Want(rec.ID) {
		b.Queue(acceptSQL, args...).QueryRow(func(row pgx.Row) error {
			var seq int64
			return noRows(row.Scan(&seq), dup)
		})
		return
	}
	b.Queue(acceptPeekSQL, args...).QueryRow(func(row pgx.Row) error {
		var (
			seq                  pgtype.Int8
			sid, mode, drop      pgtype.Text
			debounce, queueLimit pgtype.Int8
		)
		if err := row.Scan(&seq, &sid, &mode, &debounce, &queueLimit, &drop); err != nil {
			return err
		}
		*dup = !seq.Valid
		p := peeked{id: rec.ID, agentID: rec.AgentID, found: sid.Valid}
		if p.found {
			p.entry = sessions.Entry{SessionKey: rec.SessionKey, SessionID: sid.String, QueueMode: mode.String,
				QueueDebounceMs: debounce.Int64, QueueCap: int(queueLimit.Int64), QueueDrop: drop.String}
		}
		*into = append(*into, p)
		return nil
	})
}

// deliverPeeks hands what the accepts read to peek once their write
// committed, and remembers each session found for the key (as Store.Get
// does: begin_inputs.go).
func (d *Delivery) deliverPeeks(peek *sessions.QueuePeek, ps []peeked) {
	for _, p := range ps {
		if p.found {
			d.db.heads.note(p.agentID, p.entry.SessionKey, p.entry.SessionID)
		}
		if peek.Got != nil {
			peek.Got(p.id, p.entry, p.found)
		}
	}
}
