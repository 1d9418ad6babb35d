package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
)

// Entry types the store looks at (the body says the same).
const (
	typeSession    = "session"
	typeMessage    = "message"
	typeCompaction = "compaction"
)

// TranscriptLog is one session's transcript with the files backend's
// semantics (transcript.File, SPEC §3.4): pi-coding-agent v3 entries whose
// bodies are the bytes the files backend writes as lines, chained by parent
// ids, the context rebuilt from the latest compaction by the same code
// (transcript.Chain). An append is one job of the writer: it reads the
// head (last seq, leaf) and writes the entries and the head in the
// writer's transaction, so concurrent appends form one chain. It is safe
// for concurrent use.
type TranscriptLog struct {
	db        *DB
	sessionID string
	hdr       transcript.Header
	rand      func() uint32
}

var _ sessions.TranscriptLog = (*TranscriptLog)(nil)

// Transcript returns session sessionID's transcript; hdr is what its
// session header records when the first append writes it. It does no I/O.
func (db *DB) Transcript(sessionID string, hdr transcript.Header) (*TranscriptLog, error) {
	if err := sessions.CheckSessionID(sessionID); err != nil {
		return nil, fmt.Errorf("sqlitestore: transcript: %w", err)
	}
	return &TranscriptLog{db: db, sessionID: sessionID, hdr: hdr, rand: rand.Uint32}, nil
}

// pendingEntry is one entry to append, encoded once its parent is known.
type pendingEntry struct {
	id, typ string
	enc     func(parent string, now time.Time) ([]byte, error)
	// msg is the message as encoded (set by enc), for the search index.
	msg *sessions.Message
}

// Append writes complete messages as a chain continuing the current leaf
// and returns their entry ids, once committed (durable).
func (t *TranscriptLog) Append(ctx context.Context, msgs ...sessions.Message) ([]string, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	return t.appendEntries(ctx, messageEntries(msgs), nil, false)
}

// messageEntries are msgs as entries to append.
func messageEntries(msgs []sessions.Message) []pendingEntry {
	out := make([]pendingEntry, len(msgs))
	for i, m := range msgs {
		out[i] = pendingEntry{typ: typeMessage, enc: func(parent string, now time.Time) ([]byte, error) {
			b, norm, err := transcript.EncodeMessage(out[i].id, parent, m, now)
			out[i].msg = &norm
			return b, err
		}}
	}
	return out
}

// AppendLazy is Append committed lazily (writer.doLazy): committed, and
// so surviving the death of the process, when it returns, durable with the
// next durable commit or within lazySyncAfter (transcript.File.AppendLazy
// writes to the kernel and fsyncs later, the same boundary).
func (t *TranscriptLog) AppendLazy(ctx context.Context, msgs ...sessions.Message) ([]string, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	return t.appendEntries(ctx, messageEntries(msgs), nil, true)
}

// AppendCompaction appends a compaction entry. FirstKeptEntryID must be an
// entry of the current chain ("" keeps nothing before the compaction);
// otherwise the error wraps sessions.ErrNotInChain. The check runs in the
// append's job.
func (t *TranscriptLog) AppendCompaction(ctx context.Context, c sessions.Compaction) (string, error) {
	ps := []pendingEntry{{typ: typeCompaction}}
	ps[0].enc = func(parent string, now time.Time) ([]byte, error) {
		return transcript.EncodeCompaction(ps[0].id, parent, c, now)
	}
	var check func(tx *wtx, leaf string) error
	if c.FirstKeptEntryID != "" {
		check = func(tx *wtx, leaf string) error {
			in, err := t.inChain(ctx, tx, leaf, c.FirstKeptEntryID)
			if err != nil {
				return err
			}
			if !in {
				return transcript.ErrFirstKeptNotInChain(c.FirstKeptEntryID)
			}
			return nil
		}
	}
	ids, err := t.appendEntries(ctx, ps, check, false)
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// appendEntries appends entries after the leaf in one writer job (a lazy
// one if lazy), after check (if any) accepted the leaf.
func (t *TranscriptLog) appendEntries(ctx context.Context, entries []pendingEntry, check func(*wtx, string) error, lazy bool) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("transcript: append %s: %w", t.sessionID, err)
	}
	now := t.db.clock()
	submit := t.db.w.do
	if lazy {
		submit = t.db.w.doLazy
	}
	err := submit(ctx, func(tx *wtx) error {
		var (
			last int64
			leaf string
		)
		err := tx.QueryRow(`SELECT last_seq, leaf_id FROM transcript_heads WHERE session_id = ?`, t.sessionID).Scan(&last, &leaf)
		if errors.Is(err, sql.ErrNoRows) {
			last, leaf = 0, ""
		} else if err != nil {
			return err
		}
		if check != nil {
			if err := check(tx, leaf); err != nil {
				return err
			}
		}
		if last == 0 {
			hdr, err := transcript.EncodeHeader(t.sessionID, t.hdr, now)
			if err != nil {
				return err
			}
			if err := t.insert(tx, 1, t.sessionID, "", typeSession, hdr, now); err != nil {
				return err
			}
			last = 1
		}
		messages := 0
		parent := leaf
		for i := range entries {
			id, err := t.newID(tx, entries[:i])
			if err != nil {
				return err
			}
			entries[i].id = id
			body, err := entries[i].enc(parent, now)
			if err != nil {
				return err
			}
			last++
			if err := t.insert(tx, last, id, parent, entries[i].typ, body, now); err != nil {
				return err
			}
			if entries[i].typ == typeMessage {
				messages++
				if err := indexMessage(tx, t.sessionID, last, entries[i].msg); err != nil {
					return err
				}
			}
			parent = id
		}
		_, err = tx.Exec(`INSERT INTO transcript_heads (session_id, last_seq, leaf_id, messages) VALUES (?, ?, ?, ?)
			ON CONFLICT (session_id) DO UPDATE SET last_seq = excluded.last_seq, leaf_id = excluded.leaf_id,
				messages = messages + excluded.messages`, t.sessionID, last, parent, messages)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("transcript: append %s: %w", t.sessionID, err)
	}
	ids := make([]string, len(entries))
	for i, p := range entries {
		ids[i] = p.id
	}
	return ids, nil
}

func (t *TranscriptLog) insert(tx *wtx, seq int64, id, parent, typ string, body []byte, now time.Time) error {
	var p any
	if parent != "" {
		p = parent
	}
	_, err := tx.Exec(`INSERT INTO transcript_entries (session_id, seq, id, parent_id, type, body, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, t.sessionID, seq, id, p, typ, string(body), toNanos(now))
	return err
}

// newID draws an entry id no entry of the transcript (nor of taken) has.
func (t *TranscriptLog) newID(tx *wtx, taken []pendingEntry) (string, error) {
	for {
		id := transcript.NewEntryID(t.rand())
		dup := false
		for _, p := range taken {
			dup = dup || p.id == id
		}
		if dup {
			continue
		}
		var n int
		if err := tx.QueryRow(`SELECT count(*) FROM transcript_entries WHERE session_id = ? AND id = ?`,
			t.sessionID, id).Scan(&n); err != nil {
			return "", err
		}
		if n == 0 {
			return id, nil
		}
	}
}

// inChainSQL walks the chain back from ? (the leaf) until it meets the
// entry sought; the walk is bounded by the number of entries, so a damaged
// cycle ends.
const inChainSQL = `WITH RECURSIVE walk(id, parent_id, depth) AS (
	SELECT id, parent_id, 1 FROM transcript_entries WHERE session_id = ?1 AND id = ?2
	UNION ALL
	SELECT e.id, e.parent_id, w.depth + 1 FROM walk w
	JOIN transcript_entries e ON e.session_id = ?1 AND e.id = w.parent_id
	WHERE w.id <> ?3 AND w.depth <= (SELECT count(*) FROM transcript_entries WHERE session_id = ?1))
SELECT EXISTS (SELECT 1 FROM walk WHERE id = ?3)`

func (t *TranscriptLog) inChain(ctx context.Context, tx *wtx, leaf, id string) (bool, error) {
	var in bool
	err := tx.QueryRowContext(ctx, inChainSQL, t.sessionID, leaf, id).Scan(&in)
	return in, err
}

// row is one stored entry.
type row struct {
	seq  int64
	typ  string
	body []byte
}

func (t *TranscriptLog) load(ctx context.Context, q string, args ...any) ([]row, error) {
	var out []row
	err := t.db.query(ctx, func(r *sql.Rows) error {
		var (
			x    row
			body string
		)
		if err := r.Scan(&x.seq, &x.typ, &body); err != nil {
			return err
		}
		x.body = []byte(body)
		out = append(out, x)
		return nil
	}, q, args...)
	return out, err
}

func chainOf(rows []row, complete bool) (*transcript.Chain, error) {
	c := transcript.NewChain(complete)
	for _, r := range rows {
		if err := c.Add(r.body, r.seq); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// tailSQL reads from the latest compaction, or from the first entry it
// kept if that is earlier; a transcript without one is read whole.
const tailSQL = `WITH c AS (
	SELECT seq, json_extract(body, '$.firstKeptEntryId') AS kept FROM transcript_entries
	WHERE session_id = ?1 AND type = 'compaction' ORDER BY seq DESC LIMIT 1),
start AS (
	SELECT min(c.seq, COALESCE((SELECT k.seq FROM transcript_entries k
		WHERE k.session_id = ?1 AND k.id = c.kept), c.seq)) AS seq FROM c)
SELECT seq, type, body FROM transcript_entries
WHERE session_id = ?1 AND seq >= COALESCE((SELECT seq FROM start), 0)
ORDER BY seq`

// Context rebuilds what the model is sent (SPEC §3.4), reading from the
// latest compaction; only a chain that needs more is read whole.
func (t *TranscriptLog) Context(ctx context.Context) (sessions.Context, error) {
	rows, err := t.load(ctx, tailSQL, t.sessionID)
	if err != nil {
		return sessions.Context{}, fmt.Errorf("transcript: context %s: %w", t.sessionID, err)
	}
	complete := true
	for _, r := range rows {
		if r.typ == typeCompaction {
			complete = len(rows) > 0 && rows[0].seq == 1
		}
	}
	c, err := chainOf(rows, complete)
	if err != nil {
		return sessions.Context{}, fmt.Errorf("transcript: context %s: %w", t.sessionID, err)
	}
	if out, ok := c.Context(); ok {
		return out, nil
	}
	c, err = t.whole(ctx)
	if err != nil {
		return sessions.Context{}, fmt.Errorf("transcript: context: %w", err)
	}
	out, _ := c.Context()
	return out, nil
}

func (t *TranscriptLog) whole(ctx context.Context) (*transcript.Chain, error) {
	rows, err := t.load(ctx, `SELECT seq, type, body FROM transcript_entries WHERE session_id = ? ORDER BY seq`, t.sessionID)
	if err != nil {
		return nil, err
	}
	c, err := chainOf(rows, true)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.sessionID, err)
	}
	return c, nil
}

// History returns every message of the chain, compactions ignored (nil
// for an empty transcript).
func (t *TranscriptLog) History(ctx context.Context) ([]sessions.Message, error) {
	c, err := t.whole(ctx)
	if err != nil {
		return nil, fmt.Errorf("transcript: history: %w", err)
	}
	if c.Leaf() == "" {
		return nil, nil
	}
	return c.History(), nil
}

// Records reports which of ids were appended as user messages and whether
// the turn that took them finished (SPEC §3.7, recovery), from the last
// transcript.RecordsLookback entries.
func (t *TranscriptLog) Records(ctx context.Context, ids []string) (sessions.RecordsState, error) {
	rows, err := t.load(ctx, `SELECT seq, type, body FROM transcript_entries WHERE session_id = ?1
		AND seq > COALESCE((SELECT last_seq FROM transcript_heads WHERE session_id = ?1), 0) - ?2 ORDER BY seq`,
		t.sessionID, transcript.RecordsLookback)
	if err != nil {
		return sessions.RecordsState{Consumed: map[string]bool{}}, fmt.Errorf("transcript: records %s: %w", t.sessionID, err)
	}
	c, err := chainOf(rows, len(rows) == 0 || rows[0].seq == 1)
	if err != nil {
		return sessions.RecordsState{Consumed: map[string]bool{}}, fmt.Errorf("transcript: records %s: %w", t.sessionID, err)
	}
	return c.Records(ids), nil
}

// Stats reports the number of message entries and the seq of the latest
// compaction (0 if none).
func (t *TranscriptLog) Stats(ctx context.Context) (messages int, lastCompaction int64, err error) {
	err = t.db.read.QueryRowContext(ctx, `SELECT
		COALESCE((SELECT messages FROM transcript_heads WHERE session_id = ?1), 0),
		COALESCE((SELECT seq FROM transcript_entries WHERE session_id = ?1 AND type = 'compaction'
			ORDER BY seq DESC LIMIT 1), 0)`, t.sessionID).Scan(&messages, &lastCompaction)
	if err != nil {
		return 0, 0, fmt.Errorf("transcript: stats %s: %w", t.sessionID, storageErr(err))
	}
	return messages, lastCompaction, nil
}

// TranscriptOf returns the transcript of the session e describes; its
// header (written by the first append) records e's key and this agent.
func (s *Store) TranscriptOf(e sessions.Entry) (sessions.TranscriptLog, error) {
	t, err := s.db.Transcript(e.SessionID, transcript.Header{SessionKey: e.SessionKey, AgentID: s.agentID})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// Transcript returns the transcript of session sessionID, current or
// archived; another agent's transcript is sessions.ErrNotFound.
func (s *Store) Transcript(sessionID string) (sessions.TranscriptLog, error) {
	if err := sessions.CheckSessionID(sessionID); err != nil {
		return nil, fmt.Errorf("sqlitestore: transcript: %w", err)
	}
	hdr := transcript.Header{AgentID: s.agentID}
	e, ok, err := s.GetByID(sessionID)
	switch {
	case err != nil:
		return nil, fmt.Errorf("sqlitestore: transcript %s: %w", sessionID, err)
	case ok:
		hdr.SessionKey = e.SessionKey
	default:
		owner, err := s.owner(sessionID)
		if err != nil {
			return nil, fmt.Errorf("sqlitestore: transcript %s: %w", sessionID, err)
		}
		if owner != "" && owner != s.agentID {
			return nil, fmt.Errorf("sqlitestore: transcript %s: %w: it belongs to agent %q, not %q",
				sessionID, sessions.ErrNotFound, owner, s.agentID)
		}
	}
	t, err := s.db.Transcript(sessionID, hdr)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// owner is the agent a transcript's session header names ("" when the
// transcript has no header yet).
func (s *Store) owner(sessionID string) (string, error) {
	ctx, cancel := call()
	defer cancel()
	var body string
	err := s.db.read.QueryRowContext(ctx, `SELECT body FROM transcript_entries
		WHERE session_id = ? AND seq = 1 AND type = 'session'`, sessionID).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", storageErr(err)
	}
	var h struct {
		AgentID string `json:"agentId"`
	}
	if err := json.Unmarshal([]byte(body), &h); err != nil {
		return "", fmt.Errorf("session header: %w", err)
	}
	return h.AgentID, nil
}
