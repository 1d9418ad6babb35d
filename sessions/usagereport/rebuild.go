package usagereport

import (
	"context"
	"fmt"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// RebuildOptions configure Rebuild.
type RebuildOptions struct {
	// AgentID limits the rebuild to one agent ("" every agent with
	// sessions).
	AgentID string
	// Before skips turns answered at or after it (zero: none skipped): a
	// daemon running beside the rebuild records those itself.
	Before time.Time
	// Price prices a turn whose transcript stored no cost (written before
	// cost accounting, or by a model then unpriced); nil leaves it 0.
	Price func(provider, model string, u sessions.Usage) float64
}

// RebuildReport is what Rebuild did.
type RebuildReport struct {
	Sessions int `json:"sessions"` // transcripts read
	Turns    int `json:"turns"`    // turns with usage found in them
	Added    int `json:"added"`    // rows the ledger lacked and got
	Priced   int `json:"priced"`   // of those, priced by Price
	Skipped  int `json:"skipped"`  // turns a ledger refuses (sessions.CheckUsageRow)
}

// Rebuild adds to b's usage ledger the turns b's transcripts hold and
// the ledger lacks (operators upgrading from a version without the ledger,
// or rows a crash lost). A transcript turn is the assistant messages
// between two user messages: its usage is their sum, its time and model
// those of its last assistant message, the turn's Ref. Rows rebuilt carry
// the session's room (its entry's channel and last chat) and, for a
// direct chat, its sender; a group's sender is unknown. It reads the
// current and archived sessions the index lists (an archive of a deleted
// key is not listed). Running it again adds nothing.
func Rebuild(ctx context.Context, b sessions.Backend, o RebuildOptions) (RebuildReport, error) {
	var rep RebuildReport
	agents := []string{o.AgentID}
	if o.AgentID == "" {
		var err error
		if agents, err = b.Agents(); err != nil {
			return rep, fmt.Errorf("usage rebuild: agents: %w", err)
		}
	}
	ledger := b.Usage()
	for _, a := range agents {
		if err := rebuildAgentUsage(ctx, b, ledger, a, o, &rep); err != nil {
			return rep, fmt.Errorf("usage rebuild: agent %s: %w", a, err)
		}
	}
	return rep, nil
}

func rebuildAgentUsage(ctx context.Context, b sessions.Backend, ledger sessions.UsageLog, agentID string, o RebuildOptions, rep *RebuildReport) error {
	st, err := b.Store(agentID)
	if err != nil {
		return err
	}
	have, err := ledger.Refs(ctx, agentID)
	if err != nil {
		return err
	}
	entries, err := st.List()
	if err != nil {
		return err
	}
	for _, e := range entries {
		ids := []string{e.SessionID}
		if key, err := routing.Parse(e.SessionKey); err == nil {
			arch, err := st.Archived(key)
			if err != nil {
				return err
			}
			for _, a := range arch {
				ids = append(ids, a.SessionID)
			}
		}
		for _, id := range ids {
			tr, err := st.Transcript(id)
			if err != nil {
				continue // an archive whose file is gone
			}
			hist, err := tr.History(ctx)
			if err != nil {
				return fmt.Errorf("session %s: %w", id, err)
			}
			rep.Sessions++
			var rows []sessions.UsageRow
			for _, r := range transcriptTurns(agentID, e, id, hist) {
				rep.Turns++
				if (!o.Before.IsZero() && !r.At.Before(o.Before)) || have[r.Ref()] {
					continue
				}
				priced := false
				if r.Cost == 0 && o.Price != nil {
					r.Cost = o.Price(r.Provider, r.Model, sessions.Usage{Input: r.Input, Output: r.Output, CacheRead: r.CacheRead, CacheWrite: r.CacheWrite})
					priced = r.Cost > 0
				}
				if sessions.CheckUsageRow(r) != nil {
					rep.Skipped++
					continue
				}
				if priced {
					rep.Priced++
				}
				rows = append(rows, r)
				have[r.Ref()] = true
			}
			if len(rows) == 0 {
				continue
			}
			if err := ledger.Record(ctx, rows...); err != nil {
				return fmt.Errorf("session %s: %w", id, err)
			}
			rep.Added += len(rows)
		}
	}
	return nil
}

// transcriptTurns are the usage rows of session sessionID's messages (of
// e's key): one per run of assistant messages with usage between user
// messages.
func transcriptTurns(agentID string, e sessions.Entry, sessionID string, msgs []sessions.Message) []sessions.UsageRow {
	base := sessions.UsageRow{AgentID: agentID, SessionKey: e.SessionKey, SessionID: sessionID, Channel: e.Channel}
	if e.Channel != "" && e.LastTo != "" {
		base.Room = e.Channel + ":" + e.LastTo
		if e.LastThreadID != "" {
			base.Room += ":" + e.LastThreadID
		}
	}
	if e.ChatType == "direct" && e.LastFrom != "" {
		base.SenderID, base.SenderName = e.LastFrom, e.DisplayName
	}
	var out []sessions.UsageRow
	var cur *sessions.UsageRow
	end := func() {
		if cur != nil {
			out = append(out, *cur)
			cur = nil
		}
	}
	for _, m := range msgs {
		switch {
		case m.Role == sessions.RoleUser:
			end()
		case m.Role == sessions.RoleAssistant && m.Usage != nil && m.Timestamp > 0:
			if cur == nil {
				r := base
				cur = &r
			}
			u := m.Usage
			cur.Input += u.Input
			cur.Output += u.Output
			cur.CacheRead += u.CacheRead
			cur.CacheWrite += u.CacheWrite
			cur.Cost += u.Cost.Total
			cur.At, cur.Provider, cur.Model = time.UnixMilli(m.Timestamp), m.Provider, m.Model
		}
	}
	end()
	return out
}
