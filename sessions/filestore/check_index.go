package filestore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// agentCheck compares one agent's index with its transcripts.
type agentCheck struct {
	agent, dir string
	now        time.Time
	opts       sessions.CheckOptions // Settle: counters of a transcript written this recently are not judged
	moves      sessions.KeyMoves     // recorded key moves: a header's key resolves through them

	idx         map[string]sessions.Entry
	transcripts map[string]transcriptSummary // by session id
	ids         []string                     // transcript ids, sorted
	byID        map[string]string            // session id -> key, from the index

	problems []sessions.Problem
	badLines []sessions.Problem // reported after the other checks, as doctor always did
}

func (c *agentCheck) add(p sessions.Problem) {
	p.Agent = c.agent
	c.problems = append(c.problems, p)
}

func (c *agentCheck) run() error {
	indexPath := filepath.Join(c.dir, indexName)
	idx, err := ReadIndex(c.dir)
	switch {
	case errors.Is(err, ErrSeed000Index):
		// Not damage: rebuilding from <uuid>.jsonl transcripts would leave
		// its sessions out, so nothing is done to it.
		c.add(sessions.Problem{Code: sessions.CodeIndexForeign, Path: indexPath, Message: err.Error()})
		idx = map[string]sessions.Entry{}
	case err != nil:
		c.add(sessions.Problem{Code: sessions.CodeIndexUnreadable, Path: indexPath, Message: err.Error(), Fixable: true,
			Fix:  "keep it as sessions.json.corrupt.<ts> and rebuild the index from the transcripts",
			Plan: repairPlan(func(ctx context.Context, r *repairer) error { return r.quarantineIndex(ctx, c.agent) })})
		idx = map[string]sessions.Entry{}
	}
	c.idx = idx
	if err := c.scan(); err != nil {
		return err
	}
	keys := make([]string, 0, len(idx))
	c.byID = map[string]string{}
	for k, e := range idx {
		c.byID[e.SessionID] = k
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		c.checkEntry(k, idx[k])
	}
	return c.checkOrphans()
}

// scan reads every transcript ("<uuid>.jsonl") of the directory once.
func (c *agentCheck) scan() error {
	files, err := os.ReadDir(c.dir)
	if err != nil {
		return fmt.Errorf("sessions: check: %w", err)
	}
	c.transcripts = map[string]transcriptSummary{}
	for _, f := range files {
		id, ok := strings.CutSuffix(f.Name(), transcriptExt)
		// The change log (sessions.delta.jsonl) and strays are not transcripts.
		if !ok || sessions.CheckSessionID(id) != nil || !f.Type().IsRegular() {
			continue
		}
		path := filepath.Join(c.dir, f.Name())
		s, err := summarizeTranscript(path)
		if err != nil {
			return fmt.Errorf("sessions: check: %w", err)
		}
		c.transcripts[id] = s
		c.ids = append(c.ids, id)
		if len(s.bad) > 0 {
			c.badLines = append(c.badLines, badLineProblem(c.agent, path, s.bad))
		}
	}
	sort.Strings(c.ids)
	return nil
}

// checkEntry compares entry e of key k with its transcript.
func (c *agentCheck) checkEntry(k string, e sessions.Entry) {
	tpath := filepath.Join(c.dir, e.SessionID+transcriptExt)
	s, ok := c.transcripts[e.SessionID]
	sid := e.SessionID
	if !ok {
		if e.MessageCount == 0 && e.CompactionCount == 0 {
			return // created, nothing appended yet: the transcript comes with the first message
		}
		c.add(sessions.Problem{Code: sessions.CodeMissingTranscript, Path: tpath, Key: k, SessionID: sid, Fixable: true,
			Message: fmt.Sprintf("entry %s says %d messages but its transcript is missing", k, e.MessageCount),
			Fix:     "zero the entry's counters so they match the empty transcript (the messages are lost)",
			Plan: repairPlan(func(ctx context.Context, r *repairer) error {
				return r.editIndex(ctx, c.agent, func(o *opTx) {
					if e, ok := o.get(k); ok && e.SessionID == sid {
						e.MessageCount, e.CompactionCount, e.CompactionOffset, e.ContextTokens = 0, 0, 0, 0
						e.InputTokens, e.OutputTokens, e.TotalTokens = 0, 0, 0
						o.put(k, e)
					}
				})
			})})
		return
	}
	if e.MessageCount >= s.messages && e.CompactionCount >= s.compactions {
		return
	}
	if c.opts.Settling(s.modTime) {
		return // a turn in flight: the daemon adds its counters after its rows
	}
	n, comp := s.messages, s.compactions
	c.add(sessions.Problem{Code: sessions.CodeCounterLag, Path: tpath, Key: k, SessionID: sid, Fixable: true,
		Message: fmt.Sprintf("entry %s: messageCount %d, compactionCount %d; the transcript has %d and %d",
			k, e.MessageCount, e.CompactionCount, n, comp),
		Fix: "set them from the transcript",
		Plan: repairPlan(func(ctx context.Context, r *repairer) error {
			return r.editIndex(ctx, c.agent, func(o *opTx) {
				if e, ok := o.get(k); ok && e.SessionID == sid {
					e.MessageCount, e.CompactionCount = max(e.MessageCount, n), max(e.CompactionCount, comp)
					o.put(k, e)
				}
			})
		})})
}

// checkOrphans classifies the transcripts no entry points at. Among
// orphans of one key that has no entry, the newest is re-created as the
// key's current session and the others are archived.
func (c *agentCheck) checkOrphans() error {
	archived, err := readArchiveFile(filepath.Join(c.dir, archiveName))
	if err != nil {
		archived = nil // an unreadable archive list only loses the unrenamed check
	}
	archivedAs := map[string]string{}
	for _, l := range archived {
		for _, a := range l {
			archivedAs[a.SessionID] = a.File
		}
	}
	winner := map[string]string{}
	for _, id := range c.ids {
		s := c.transcripts[id]
		if _, ok := c.byID[id]; ok || s.hdr == nil || s.hdr.id != id {
			continue
		}
		pk, err := c.headerKey(s.hdr.key)
		if err != nil || pk.Agent != c.agent {
			continue
		}
		k := pk.String()
		if _, ok := c.idx[k]; ok {
			continue
		}
		if w, ok := winner[k]; !ok || c.transcripts[w].lastAt.Before(s.lastAt) {
			winner[k] = id
		}
	}
	for _, id := range c.ids {
		if _, ok := c.byID[id]; !ok {
			c.add(c.orphan(id, archivedAs, winner))
		}
	}
	return nil
}

// headerKey is the key a transcript header names, resolved through the
// recorded key moves: the key its session is under now.
func (c *agentCheck) headerKey(s string) (routing.Key, error) {
	k, err := routing.Parse(s)
	if err != nil {
		return k, err
	}
	return c.moves.Resolve(k), nil
}

// orphan classifies transcript id, which no entry points at.
func (c *agentCheck) orphan(id string, archivedAs, winner map[string]string) sessions.Problem {
	path := filepath.Join(c.dir, id+transcriptExt)
	if name, ok := archivedAs[id]; ok && name != "" && filepath.Base(name) == name {
		dst := filepath.Join(c.dir, name)
		return sessions.Problem{Code: sessions.CodeUnrenamedArchive, Path: path, SessionID: id, Fixable: true,
			Message: "archived in archive.json as " + name + " but the transcript was not renamed",
			Fix:     "rename it to " + name,
			Plan: repairPlan(func(ctx context.Context, r *repairer) error {
				if _, err := os.Lstat(dst); err == nil {
					return fmt.Errorf("%s exists", name)
				}
				return renameDurable(path, dst)
			})}
	}
	s := c.transcripts[id]
	p := sessions.Problem{Code: sessions.CodeOrphanTranscript, Path: path, SessionID: id}
	h := s.hdr
	var key routing.Key
	var kerr error
	if h != nil {
		key, kerr = c.headerKey(h.key)
	}
	switch {
	case h == nil || h.id != id:
		p.Message = fmt.Sprintf("transcript without an entry and without a usable header (%d messages)", s.messages)
		return p // needs a human; never deleted
	case kerr != nil || key.Agent != c.agent:
		p.Message = fmt.Sprintf("transcript without an entry; its header key %q does not belong to agent %s", h.key, c.agent)
		return p
	}
	k := key.String()
	moved := ""
	if hk, _ := routing.Parse(h.key); hk.String() != k {
		moved = " (started as " + hk.String() + ", moved)"
	}
	p.Key, p.Fixable = k, true
	cur, hasEntry := c.idx[k]
	if w := winner[k]; hasEntry || w != id {
		current := cur.SessionID
		if !hasEntry {
			current = w + " (newer orphan, re-created)"
		}
		name := id + transcriptExt + resetInfix + archiveTS(c.now)
		p.Message = fmt.Sprintf("transcript of %s%s without an entry; the key's current session is %s", key, moved, current)
		p.Fix = "archive it as " + name + " (kept, recoverable)"
		p.Plan = repairPlan(func(ctx context.Context, r *repairer) error { return renameDurable(path, filepath.Join(c.dir, name)) })
		return p
	}
	p.Message = fmt.Sprintf("transcript of %s%s (%d messages) without an entry", key, moved, s.messages)
	p.Fix = "re-create the entry from the transcript's header"
	entry := entryFromSummary(key, id, s, c.now)
	p.Plan = repairPlan(func(ctx context.Context, r *repairer) error {
		return r.editIndex(ctx, c.agent, func(o *opTx) {
			if _, ok := o.get(k); !ok {
				o.put(k, entry)
			}
		})
	})
	return p
}

// entryFromSummary rebuilds an index entry from a scanned transcript.
func entryFromSummary(key routing.Key, id string, s transcriptSummary, now time.Time) sessions.Entry {
	started := s.hdr.at
	if started.IsZero() {
		started = now
	}
	last := s.lastAt
	if last.IsZero() {
		last = started
	}
	e := sessions.Entry{
		SessionKey: key.String(), SessionID: id, CreatedAt: started, SessionStartedAt: started,
		LastInteractionAt: last, UpdatedAt: now, Title: sessions.StoredTitle(s.title()), Channel: key.Channel,
		LastChannel: key.Channel, LastAccountID: key.Account, MessageCount: s.messages,
		CompactionCount: s.compactions, InputTokens: s.input, OutputTokens: s.output, TotalTokens: s.total,
		ContextTokens: s.context, Model: s.model, Provider: s.provider,
	}
	if key.Kind != "" {
		e.ChatType = string(key.Kind)
	}
	return e
}

// quarantineIndex keeps an unreadable index as sessions.json.corrupt.<ts>
// under the store lock; the orphan repairs that follow rebuild the entries
// from the transcripts.
func (r *repairer) quarantineIndex(ctx context.Context, agent string) error {
	st, err := r.store(agent)
	if err != nil {
		return err
	}
	_, unlock, err := st.Lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := ReadIndex(st.dir); err == nil {
		return nil // repaired meanwhile
	}
	r.touched[agent] = st
	r.edits++
	return renameDurable(st.indexPath, st.indexPath+".corrupt."+archiveTS(r.opts.Now))
}
