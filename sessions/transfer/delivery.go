package transfer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/gateway/gateway/sessions"
)

// A migration also moves the work the ingress journal and the reply outbox
// still hold (SPEC §3.7), through the seam's Delivery on both sides: the
// pending records (with their start and failure counts, which Accept
// stores), the replies not completely delivered (with the chunks already
// sent, which Ready stores), and the drafts on screen. Records already
// answered by a stored reply are not pending and are not moved: the reply
// carries their ids and retires nothing on the target, which the daemon
// tolerates. What is done stays behind (it is only there to drop
// duplicates of messages that were answered, which the channels no longer
// redeliver once their cursors moved).

// DeliveryCounts counts the work Delivery holds.
type DeliveryCounts struct {
	Pending int `json:"pending"`
	Replies int `json:"replies"`
	Drafts  int `json:"drafts"`
}

// CopyDelivery copies from's pending records, unsent replies and drafts
// into to; what to holds already (same id) is skipped, so running it twice
// copies nothing the second time. from must be a handle that did not
// accept the records itself (a Delivery leaves its own out of Pending).
func CopyDelivery(ctx context.Context, from, to sessions.Delivery) (copied DeliveryCounts, err error) {
	recs, reps, drafts, err := deliveryState(from)
	if err != nil {
		return copied, fmt.Errorf("sessions: copy delivery: read: %w", err)
	}
	_, haveReps, haveDrafts, err := deliveryState(to)
	if err != nil {
		return copied, fmt.Errorf("sessions: copy delivery: read target: %w", err)
	}
	for _, r := range recs {
		dup, err := to.Accept(ctx, r)
		if err != nil {
			return copied, fmt.Errorf("sessions: copy delivery: record %q: %w", sessions.Clip(r.ID), err)
		}
		if !dup {
			copied.Pending++
		}
	}
	known := map[string]bool{}
	for _, r := range haveReps {
		known[r.ID] = true
	}
	for _, r := range reps {
		if known[r.ID] {
			continue
		}
		if err := to.Ready(r); err != nil {
			return copied, fmt.Errorf("sessions: copy delivery: reply %q: %w", sessions.Clip(r.ID), err)
		}
		if r.Sent > 0 {
			if err := to.Sent(r.ID, r.Sent); err != nil {
				return copied, fmt.Errorf("sessions: copy delivery: reply %q: %w", sessions.Clip(r.ID), err)
			}
		}
		copied.Replies++
	}
	known = map[string]bool{}
	for _, d := range haveDrafts {
		known[d.ID] = true
	}
	for _, d := range drafts {
		if known[d.ID] {
			continue
		}
		if err := to.Draft(d); err != nil {
			return copied, fmt.Errorf("sessions: copy delivery: draft %q: %w", sessions.Clip(d.ID), err)
		}
		copied.Drafts++
	}
	return copied, nil
}

func deliveryState(d sessions.Delivery) ([]sessions.Record, []sessions.Reply, []sessions.Draft, error) {
	recs, err := d.Pending()
	if err != nil {
		return nil, nil, nil, err
	}
	reps, err := d.Replies()
	if err != nil {
		return nil, nil, nil, err
	}
	drafts, err := d.Drafts()
	if err != nil {
		return nil, nil, nil, err
	}
	return recs, reps, drafts, nil
}

// CompareDelivery checks that b holds the pending work of a: each record,
// reply and draft by id with the same content (times at microseconds,
// JSON compared compacted). b should be a fresh handle, which lists
// everything stored. It returns a's counts and the differences.
func CompareDelivery(a, b sessions.Delivery) (DeliveryCounts, []string, error) {
	ra, pa, da, err := deliveryState(a)
	if err != nil {
		return DeliveryCounts{}, nil, fmt.Errorf("sessions: compare delivery: %w", err)
	}
	rb, pb, db, err := deliveryState(b)
	if err != nil {
		return DeliveryCounts{}, nil, fmt.Errorf("sessions: compare delivery: %w", err)
	}
	counts := DeliveryCounts{Pending: len(ra), Replies: len(pa), Drafts: len(da)}
	var diffs []string
	diffs = append(diffs, compareByID("record", ra, rb, func(r sessions.Record) string { return r.ID }, normRecord)...)
	diffs = append(diffs, compareByID("reply", pa, pb, func(r sessions.Reply) string { return r.ID }, normReply)...)
	diffs = append(diffs, compareByID("draft", da, db, func(d sessions.Draft) string { return d.ID }, normDraft)...)
	return counts, diffs, nil
}

func compareByID[T any](what string, a, b []T, id func(T) string, norm func(T) ([]byte, error)) []string {
	have := make(map[string]T, len(b))
	for _, x := range b {
		have[id(x)] = x
	}
	var diffs []string
	for _, x := range a {
		y, ok := have[id(x)]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("%s %q: missing in the target", what, sessions.Clip(id(x))))
			continue
		}
		nx, err1 := norm(x)
		ny, err2 := norm(y)
		if err1 != nil || err2 != nil || !bytes.Equal(nx, ny) {
			diffs = append(diffs, fmt.Sprintf("%s %q: differs in the target", what, sessions.Clip(id(x))))
		}
	}
	slices.Sort(diffs)
	return diffs
}

func compactRaw(m json.RawMessage) (json.RawMessage, error) {
	if len(m) == 0 {
		return m, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, m); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func normRecord(r sessions.Record) ([]byte, error) {
	var err error
	if r.Payload, err = compactRaw(r.Payload); err != nil {
		return nil, err
	}
	r.AcceptedAt = micros(r.AcceptedAt)
	return json.Marshal(r)
}

func normReply(r sessions.Reply) ([]byte, error) {
	var err error
	if r.Target, err = compactRaw(r.Target); err != nil {
		return nil, err
	}
	r.CreatedAt = micros(r.CreatedAt)
	if len(r.Records) == 0 {
		r.Records = nil
	}
	return json.Marshal(r)
}

func normDraft(d sessions.Draft) ([]byte, error) {
	var err error
	if d.Target, err = compactRaw(d.Target); err != nil {
		return nil, err
	}
	d.CreatedAt = micros(d.CreatedAt)
	return json.Marshal(d)
}
