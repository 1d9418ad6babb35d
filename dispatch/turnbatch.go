package dispatch

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/lanes"
)

// The batch surgery of the per-session leases (turnlease.go): yielding a
// batch to an older message queued behind it, splitting it around another
// replica's message, dropping what another replica took over.

// yieldBatch puts b's items back at the end of their lane, after
// turnWaitPoll, so that the older message of the session queued behind
// them (taken over from a dead replica, or requeued after a failure) runs
// first. An item the lane has no room for is tried again later: it was
// accepted, and is never dropped for the lane's cap here.
func (tl turnLeases) yieldBatch(b laneBatch) {
	d := tl.d
	items := b.Items
	var retry func()
	retry = func() {
		if d.closing.Load() {
			return // pending in the journal: the next start, or another replica, runs them
		}
		for i, it := range items {
			w, ok := it.Payload.(*work)
			if !ok {
				continue
			}
			class := lanes.ClassMain
			if w.Key.IsSubagent() {
				class = lanes.ClassSubagent
			}
			it.At = time.Time{}
			if err := d.queue.Enqueue(b.Key, class, it); errors.Is(err, lanes.ErrFull) {
				items = items[i:]
				d.later.after(turnWaitPoll, retry)
				return
			}
		}
	}
	d.later.after(turnWaitPoll, retry)
}

// splitBatch splits b into the work that runs now and the work whose
// records are in later (held back behind another process's message),
// each in b's order. Work without records (commands, replies) stays with
// what precedes it.
func splitBatch(b laneBatch, later []string) (now, rest laneBatch) {
	now, rest = b, b
	now.Items, rest.Items = nil, nil
	if len(later) == 0 {
		now.Items = b.Items
		return now, rest
	}
	held := make(map[string]bool, len(later))
	for _, id := range later {
		held[id] = true
	}
	behind := false
	for _, it := range b.Items {
		w, ok := it.Payload.(*work)
		if !ok {
			if behind {
				rest.Items = append(rest.Items, it)
			} else {
				now.Items = append(now.Items, it)
			}
			continue
		}
		var a, z []*work
		for _, p := range expand(w) {
			switch {
			case p.RecordID != "" && held[p.RecordID]:
				behind = true
				z = append(z, p)
			case behind && p.RecordID == "":
				z = append(z, p)
			default:
				a = append(a, p)
			}
		}
		if len(a) > 0 {
			it.Payload = bundle(a)
			now.Items = append(now.Items, it)
		}
		if len(z) > 0 {
			it2 := it
			it2.Payload = bundle(z)
			rest.Items = append(rest.Items, it2)
		}
	}
	return now, rest
}

// sortBatch puts b's messages in accept order (order: record ids in the
// journal's sequence), keeping commands and replies where they are: the
// lane may hold a message requeued or yielded behind a newer one.
func sortBatch(b laneBatch, order []string) laneBatch {
	rank := make(map[string]int, len(order))
	for i, id := range order {
		rank[id] = i
	}
	first := func(it lanes.Item) (int, bool) {
		w, ok := it.Payload.(*work)
		if !ok || w.Command != "" || w.Reply != nil {
			return 0, false
		}
		for _, p := range expand(w) {
			if r, ok := rank[p.RecordID]; ok {
				return r, true
			}
		}
		return 0, false
	}
	var slots []int
	var msgs []lanes.Item
	for i, it := range b.Items {
		if _, ok := first(it); ok {
			slots = append(slots, i)
			msgs = append(msgs, it)
		}
	}
	if len(msgs) < 2 {
		return b
	}
	slices.SortStableFunc(msgs, func(x, y lanes.Item) int {
		rx, _ := first(x)
		ry, _ := first(y)
		return cmp.Compare(rx, ry)
	})
	items := slices.Clone(b.Items)
	for i, slot := range slots {
		items[slot] = msgs[i]
	}
	b.Items = items
	return b
}

// batchScope is b's agent and record ids; ok is false when b holds no
// work (its session is b.Key).
func batchScope(b laneBatch) (agentID string, ids []string, ok bool) {
	for _, it := range b.Items {
		w, isWork := it.Payload.(*work)
		if !isWork {
			continue
		}
		if !ok {
			agentID, ok = w.AgentID, true
		}
		for _, p := range expand(w) {
			if p.RecordID != "" {
				ids = append(ids, p.RecordID)
			}
		}
	}
	return agentID, ids, ok
}

// dropGone removes from b the work whose records are no longer this
// process's (another replica took them over while this one was stopped or
// cut off, or they finished there); waiting web clients are told.
func (tl turnLeases) dropGone(ctx context.Context, b laneBatch, gone []string) laneBatch {
	d := tl.d
	if len(gone) == 0 {
		return b
	}
	out := make(map[string]bool, len(gone))
	for _, id := range gone {
		out[id] = true
	}
	var (
		items   []lanes.Item
		dropped []*work
	)
	for _, it := range b.Items {
		w, ok := it.Payload.(*work)
		if !ok {
			items = append(items, it)
			continue
		}
		var keep []*work
		for _, p := range expand(w) {
			if p.RecordID != "" && out[p.RecordID] {
				dropped = append(dropped, p)
			} else {
				keep = append(keep, p)
			}
		}
		if len(keep) > 0 {
			it.Payload = bundle(keep)
			items = append(items, it)
		}
	}
	d.log.Info("messages taken over by another replica; left to it",
		zap.Stringer("session_key", b.Key), zap.Strings("record_ids", gone))
	d.fails.release(ctx, dropped, "This message is being answered by another replica of the gateway.")
	b.Items = items
	return b
}
