package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/searchtext"
)

// Maintain applies cfg to the agent's sessions (SPEC §3.3) as the files
// backend's Store.Maintain does: entries not updated within pruneAfter
// are archived ("pruned"); past maxEntries the oldest are archived,
// subagent sessions first; a session active within the last minute is
// never touched; archived sessions past archiveRetention are forgotten
// with their transcripts. In warn mode it only reports. Each archive is
// one writer job that re-checks the entry, so a session touched
// meanwhile is kept.
func (s *Store) Maintain(ctx context.Context, cfg sessions.Maintenance) (sessions.MaintenanceReport, error) {
	cfg = cfg.WithDefaults()
	rep := sessions.MaintenanceReport{AgentID: s.agentID, Enforced: cfg.Mode != sessions.MaintenanceWarn}
	now := s.db.clock()
	active := now.Add(-sessions.ActiveWindow)
	stale := now.Add(-cfg.PruneAfter)
	all, err := s.List()
	if err != nil {
		return rep, fmt.Errorf("sqlitestore: maintain %s: %w", s.agentID, err)
	}
	idle := func(e sessions.Entry) bool {
		return e.LastInteractionAt.Before(active) && e.UpdatedAt.Before(active)
	}
	var rest []sessions.Entry
	for _, e := range all {
		if e.UpdatedAt.Before(stale) && idle(e) {
			rep.Pruned = append(rep.Pruned, e.SessionKey)
		} else {
			rest = append(rest, e)
		}
	}
	slices.Sort(rep.Pruned)
	if over := len(rest) - cfg.MaxEntries; over > 0 {
		cands := slices.DeleteFunc(slices.Clone(rest), func(e sessions.Entry) bool { return !idle(e) })
		slices.SortFunc(cands, func(a, b sessions.Entry) int {
			sa, sb := isSubagent(a.SessionKey), isSubagent(b.SessionKey)
			if sa != sb {
				if sa {
					return -1
				}
				return 1
			}
			if c := a.UpdatedAt.Compare(b.UpdatedAt); c != 0 {
				return c
			}
			return strings.Compare(a.SessionKey, b.SessionKey)
		})
		for _, e := range cands[:min(over, len(cands))] {
			rep.Capped = append(rep.Capped, e.SessionKey)
		}
	}
	retention := toNanos(now.Add(-cfg.ArchiveRetention))
	if !rep.Enforced {
		err := s.db.query(ctx, func(r *sql.Rows) error {
			var id string
			err := r.Scan(&id)
			rep.ArchivesRemoved = append(rep.ArchivesRemoved, id)
			return err
		}, `SELECT session_id FROM archived WHERE agent_id = ? AND archived_at < ? ORDER BY session_id`, s.agentID, retention)
		if err != nil {
			return rep, fmt.Errorf("sqlitestore: maintain %s: archives: %w", s.agentID, err)
		}
		s.logMaintenance(rep, cfg)
		return rep, nil
	}
	for _, k := range rep.Pruned {
		if err := s.archiveIf(ctx, k, now, func(e sessions.Entry) bool { return e.UpdatedAt.Before(stale) && idle(e) }); err != nil {
			return rep, fmt.Errorf("sqlitestore: maintain %s: prune %s: %w", s.agentID, k, err)
		}
	}
	for _, k := range rep.Capped {
		if err := s.archiveIf(ctx, k, now, idle); err != nil {
			return rep, fmt.Errorf("sqlitestore: maintain %s: cap %s: %w", s.agentID, k, err)
		}
	}
	if rep.ArchivesRemoved, err = s.expireArchives(ctx, retention); err != nil {
		return rep, fmt.Errorf("sqlitestore: maintain %s: archives: %w", s.agentID, err)
	}
	s.logMaintenance(rep, cfg)
	return rep, nil
}

func isSubagent(key string) bool {
	k, err := routing.Parse(key)
	return err == nil && k.IsSubagent()
}

// archiveIf archives key k's session (reason "pruned", as deleted) if its
// entry still satisfies cond.
func (s *Store) archiveIf(ctx context.Context, k string, now time.Time, cond func(sessions.Entry) bool) error {
	return s.db.w.do(ctx, func(tx *wtx) error {
		e, ok, err := s.get(ctx, tx, k)
		if err != nil || !ok || !cond(e) {
			return err // touched, reset or deleted meanwhile
		}
		if err := s.archive(tx, k, e, "pruned", true, now); err != nil {
			return err
		}
		_, err = tx.Exec(`DELETE FROM entries WHERE agent_id = ? AND session_key = ?`, s.agentID, k)
		return err
	})
}

// expireArchives forgets the archived sessions past retention and deletes
// the transcripts that no entry and no remaining archive refers to. Each
// archive is one writer job (its row, and its transcript when nothing
// else refers to it): a round that expires thousands of long transcripts
// (a first round, a shorter archiveRetention) must not hold the writer,
// and every accept and append behind it, for all of them at once.
func (s *Store) expireArchives(ctx context.Context, before int64) ([]string, error) {
	var rows []int64
	err := s.db.query(ctx, func(r *sql.Rows) error {
		var id int64
		err := r.Scan(&id)
		rows = append(rows, id)
		return err
	}, `SELECT id FROM archived WHERE agent_id = ? AND archived_at < ? ORDER BY id`, s.agentID, before)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, row := range rows {
		var (
			id   string
			gone bool
		)
		err := s.db.w.do(ctx, func(tx *wtx) error {
			gone = false
			err := tx.QueryRow(`DELETE FROM archived WHERE id = ? AND archived_at < ? RETURNING session_id`, row, before).Scan(&id)
			if errors.Is(err, sql.ErrNoRows) {
				return nil // switched back to meanwhile
			}
			if err != nil {
				return err
			}
			gone = true
			var refs int
			if err := tx.QueryRow(`SELECT (SELECT count(*) FROM entries WHERE session_id = ?1)
				+ (SELECT count(*) FROM archived WHERE session_id = ?1)`, id).Scan(&refs); err != nil {
				return err
			}
			if refs > 0 {
				return nil
			}
			return deleteTranscript(tx, id)
		})
		if err != nil {
			slices.Sort(ids)
			return ids, err
		}
		if gone {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// deleteTranscript removes session id's transcript and its search index.
// Every statement finds the rows through a key: search_terms is keyed by
// word first, so a message's rows are found from its words, split again
// from the text search_docs kept (indexMessage's split of the same text),
// not by reading the whole index for the session's rows.
func deleteTranscript(tx *wtx, id string) error {
	if err := unindexTranscript(tx, id); err != nil {
		return err
	}
	for _, q := range []string{
		`DELETE FROM transcript_entries WHERE session_id = ?`,
		`DELETE FROM transcript_heads WHERE session_id = ?`,
		`DELETE FROM search_docs WHERE session_id = ?`,
	} {
		if _, err := tx.Exec(q, id); err != nil {
			return err
		}
	}
	return nil
}

// unindexTranscript deletes the search_terms rows of session id's
// messages, message by message.
func unindexTranscript(tx *wtx, id string) error {
	type doc struct {
		seq  int64
		text string
	}
	var docs []doc
	rows, err := tx.Query(`SELECT seq, text FROM search_docs WHERE session_id = ?`, id)
	if err != nil {
		return err
	}
	for rows.Next() {
		var d doc
		if err := rows.Scan(&d.seq, &d.text); err != nil {
			_ = rows.Close()
			return err
		}
		docs = append(docs, d)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}
	for _, d := range docs {
		list, err := json.Marshal(searchtext.Tokens(d.text))
		if err != nil {
			return err
		}
		if _, err := tx.Exec(`DELETE FROM search_terms WHERE session_id = ?1 AND seq = ?2
			AND token IN (SELECT value FROM json_each(?3))`, id, d.seq, string(list)); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) logMaintenance(rep sessions.MaintenanceReport, cfg sessions.Maintenance) {
	if len(rep.Pruned)+len(rep.Capped)+len(rep.ArchivesRemoved) == 0 {
		return
	}
	msg := "session maintenance archived sessions"
	if !rep.Enforced {
		msg = "session maintenance would archive sessions (mode warn)"
	}
	s.log.Info(msg, zap.Int("pruned", len(rep.Pruned)), zap.Int("capped", len(rep.Capped)),
		zap.Int("archives_expired", len(rep.ArchivesRemoved)), zap.Int("max_entries", cfg.MaxEntries))
}
