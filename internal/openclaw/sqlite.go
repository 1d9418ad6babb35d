package openclaw

import (
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/zstd"
	_ "modernc.org/sqlite" // the SQLite driver (pure Go)

	"github.com/gateway/gateway/sessions"
)

// Agent schema versions this package reads: 14 brought the session rows
// (session_nodes, session_windows) it reads; 23 is OpenClaw 2026.9's.
const (
	minAgentSchema = 14
	maxAgentSchema = 23
)

// copyDB copies the database at path and its -wal (when there is one) into
// dir and opens the copy: SQLite writes beside a database even when it
// opens it read-only (the -shm, a WAL replay), so the source is only read
// as plain files.
func copyDB(path, dir, name string) (*sql.DB, error) {
	dst := filepath.Join(dir, name)
	if err := copyFile(path, dst); err != nil {
		return nil, err
	}
	if err := copyFile(path+"-wal", dst+"-wal"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	db, err := sql.Open("sqlite", "file:"+dst+"?_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s is not a SQLite database: %w", path, err)
	}
	return db, nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return out.Close()
}

// schemaVersion reads the primary schema_meta row of db.
func schemaVersion(db *sql.DB) (role string, version int, err error) {
	err = db.QueryRow(`SELECT role, schema_version FROM schema_meta WHERE meta_key = 'primary'`).Scan(&role, &version)
	return role, version, err
}

// node is one session_nodes row.
type node struct {
	key, current, entry      string
	created, updated, last   sql.NullInt64
	parent, spawnedBy, label sql.NullString
	displayName              sql.NullString
}

// window is one session_windows row.
type window struct {
	id, key          string
	reason           sql.NullString
	created, updated int64
	started, ended   sql.NullInt64
}

// readSQLiteAgent reads an agent of the SQLite layout from a copy of its
// database.
func readSQLiteAgent(path, agent, tmp string, o Options, rep *Report) (*AgentPlan, error) {
	db, err := copyDB(path, tmp, agent+".sqlite")
	if err != nil {
		return nil, fmt.Errorf("openclaw: %w", err)
	}
	defer db.Close()
	bad := func(format string, a ...any) error {
		return fmt.Errorf("openclaw: %s: %s", path, fmt.Sprintf(format, a...))
	}
	role, v, err := schemaVersion(db)
	if err != nil {
		return nil, bad("no agent schema version (schema_meta): %v", err)
	}
	if role != "agent" {
		return nil, bad("schema_meta says role %q, want agent", role)
	}
	if v < minAgentSchema || v > maxAgentSchema {
		return nil, bad("agent schema %d: this version reads %d to %d (OpenClaw 2026.9); open the state once with OpenClaw 2026.9.x (`openclaw doctor --fix`) to migrate it", v, minAgentSchema, maxAgentSchema)
	}
	nodes, err := readNodes(db)
	if err != nil {
		return nil, bad("session_nodes: %v", err)
	}
	windows, err := readWindows(db)
	if err != nil {
		return nil, bad("session_windows: %v", err)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(64<<20))
	if err != nil {
		return nil, fmt.Errorf("openclaw: zstd: %w", err)
	}
	defer dec.Close()
	r := &sqliteAgent{db: db, dec: dec, path: path, agent: agent, rep: rep}
	a := &AgentPlan{ID: agent, Layout: LayoutSQLite, Source: path}
	for _, n := range nodes {
		key, err := mapKey(agent, n.key)
		if err != nil {
			unmappedKey(rep, n.key, err)
			continue
		}
		k, err := r.key(key, n, windows[n.key], o)
		if err != nil {
			return nil, err
		}
		a.add(n.key, k, rep)
	}
	countTables(db, rep)
	return a, nil
}

// sqliteAgent reads the keys of one agent's database.
type sqliteAgent struct {
	db    *sql.DB
	dec   *zstd.Decoder
	path  string
	agent string
	rep   *Report
}

// key reads one session key: its current session and its earlier windows
// that still have transcript rows (as archived sessions).
func (r *sqliteAgent) key(key string, n node, ws []window, o Options) (sessions.KeyCopy, error) {
	bad := func(err error) error {
		return fmt.Errorf("openclaw: %s: session %q: %w", r.path, sessions.Clip(n.key), err)
	}
	e, err := o.DecodeEntry(n.key, []byte(n.entry))
	if err != nil {
		return sessions.KeyCopy{}, bad(fmt.Errorf("entry_json: %w", err))
	}
	e.SessionID = n.current
	sid, err := sessionID(r.agent, n.current, r.rep)
	if err != nil {
		return sessions.KeyCopy{}, bad(err)
	}
	t, err := r.transcript(key, n.current, sid)
	if err != nil {
		return sessions.KeyCopy{}, bad(err)
	}
	e = mapEntry(key, e, r.rep)
	e.SessionID = sid
	fill := func(dst *string, v sql.NullString) {
		if *dst == "" && v.Valid {
			*dst = v.String
		}
	}
	fill(&e.ParentSessionKey, n.parent)
	fill(&e.SpawnedBy, n.spawnedBy)
	fill(&e.Label, n.label)
	fill(&e.DisplayName, n.displayName)
	settle(&e, t, clocks{created: millis(n.created.Int64), lastInteraction: millis(n.last.Int64), updated: millis(n.updated.Int64)})
	kc := sessions.KeyCopy{KeyState: sessions.KeyState{Key: key, Entry: &e}, Transcripts: map[string][][]byte{sid: t.lines}}
	// Earlier windows, newest first, as archived sessions.
	for i := len(ws) - 1; i >= 0; i-- {
		w := ws[i]
		if w.id == n.current {
			continue
		}
		wid, err := sessionID(r.agent, w.id, r.rep)
		if err != nil {
			return sessions.KeyCopy{}, bad(err)
		}
		wt, err := r.transcript(key, w.id, wid)
		if err != nil {
			return sessions.KeyCopy{}, bad(err)
		}
		if wt.messages == 0 {
			r.rep.add("session_windows.withoutTranscript", "an earlier session of a key whose transcript rows are gone (cold or archived blobs): not imported")
			continue
		}
		reason := "manual"
		if w.reason.Valid && w.reason.String != "" && w.reason.String != "initial" {
			reason = w.reason.String
		}
		at := millis(w.ended.Int64)
		if at.IsZero() {
			at = millis(w.updated)
		}
		kc.Archived = append(kc.Archived, sessions.Archived{SessionID: wid, Reason: reason, ArchivedAt: at,
			Title: wt.title, SessionStartedAt: millis(max(w.started.Int64, w.created)), UpdatedAt: millis(w.updated), MessageCount: wt.messages})
		kc.Transcripts[wid] = wt.lines
	}
	return kc, nil
}

// transcript reads session id's events: the active path when the database
// has it materialised, else the chain ending at the last event.
func (r *sqliteAgent) transcript(key, id, sid string) (transcript, error) {
	rows, err := r.db.Query(`SELECT e.seq, e.event_json, e.event_zstd,
		(SELECT a.active_position FROM session_transcript_active_events a WHERE a.session_id = e.session_id AND a.event_seq = e.seq)
		FROM transcript_events e WHERE e.session_id = ? ORDER BY e.seq`, id)
	if err != nil {
		return transcript{}, fmt.Errorf("transcript_events: %w", err)
	}
	defer rows.Close()
	var all, active []line
	var header *line
	var activePos []int64
	for rows.Next() {
		var seq int64
		var js sql.NullString
		var z []byte
		var pos sql.NullInt64
		if err := rows.Scan(&seq, &js, &z, &pos); err != nil {
			return transcript{}, fmt.Errorf("transcript_events: %w", err)
		}
		raw := []byte(js.String)
		if !js.Valid {
			if raw, err = r.dec.DecodeAll(z, nil); err != nil {
				return transcript{}, fmt.Errorf("transcript_events seq %d: event_zstd: %w", seq, err)
			}
		}
		ls, err := parseLines(fmt.Sprintf("transcript_events seq %d", seq), [][]byte{raw})
		if err != nil {
			return transcript{}, err
		}
		if len(ls) == 0 {
			continue
		}
		l := ls[0]
		all = append(all, l)
		if l.Type == "session" && header == nil {
			header = &all[len(all)-1]
		}
		if pos.Valid && l.Type != "session" {
			active = append(active, l)
			activePos = append(activePos, pos.Int64)
		}
	}
	if err := rows.Err(); err != nil {
		return transcript{}, fmt.Errorf("transcript_events: %w", err)
	}
	var path []line
	if len(active) > 0 {
		sortByPos(active, activePos)
		path = active
		if n := len(all) - len(active) - btoi(header != nil); n > 0 {
			r.rep.addN("transcript.abandonedBranch", n, "entries of branches that are not active (rewind, edit): left out, as OpenClaw leaves them out of the context")
		}
	} else {
		header, path = activeBranch(all, r.rep)
	}
	return build(r.agent, key, sid, header, path, r.rep)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sortByPos orders ls by their active positions.
func sortByPos(ls []line, pos []int64) {
	for i := 1; i < len(ls); i++ {
		for j := i; j > 0 && pos[j] < pos[j-1]; j-- {
			ls[j], ls[j-1] = ls[j-1], ls[j]
			pos[j], pos[j-1] = pos[j-1], pos[j]
		}
	}
}

func readNodes(db *sql.DB) ([]node, error) {
	rows, err := db.Query(`SELECT session_key, current_session_id, entry_json, created_at, updated_at, last_interaction_at,
		parent_session_key, spawned_by, label, display_name FROM session_nodes ORDER BY session_key`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []node
	for rows.Next() {
		var n node
		if err := rows.Scan(&n.key, &n.current, &n.entry, &n.created, &n.updated, &n.last, &n.parent, &n.spawnedBy, &n.label, &n.displayName); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// readWindows returns every session key's windows, oldest first.
func readWindows(db *sql.DB) (map[string][]window, error) {
	rows, err := db.Query(`SELECT session_id, session_key, reason, created_at, updated_at, started_at, ended_at
		FROM session_windows ORDER BY session_key, created_at, session_id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]window{}
	for rows.Next() {
		var w window
		if err := rows.Scan(&w.id, &w.key, &w.reason, &w.created, &w.updated, &w.started, &w.ended); err != nil {
			return nil, err
		}
		out[w.key] = append(out[w.key], w)
	}
	return out, rows.Err()
}

// unmappedTables are tables of the agent database with rows the gateway
// has no place for, and why.
var unmappedTables = []struct{ table, why string }{
	{"memory_index_chunks", "OpenClaw's memory index (embeddings of workspace files): the gateway's memory notes are another thing; not imported"},
	{"session_transcript_archives", "archived transcripts kept as blobs: not imported"},
	{"session_transcript_cold_archives", "cold transcript archives (sessions/cold/*.zst): not imported"},
	{"conversation_deliveries", "OpenClaw's delivery journal: its pending deliveries are not resumed here"},
	{"session_pending_inputs", "inputs OpenClaw had not yet run: not imported"},
}

// countTables counts the rows of the unmapped tables that exist.
func countTables(db *sql.DB, rep *Report) {
	for _, t := range unmappedTables {
		var n int
		// The table names are constants of this file, never input.
		if db.QueryRow(`SELECT count(*) FROM `+t.table).Scan(&n) == nil {
			rep.addN("agent."+t.table, n, t.why)
		}
	}
}
