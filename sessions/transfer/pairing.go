package transfer

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/gateway/gateway/internal/pairstate"
	"github.com/gateway/gateway/sessions"
)

// Pairing (pending requests and approved senders per channel) moves through
// the seam's PairingState on both sides; channel cursors through Cursors
// (transfer_cursors.go).

// CopyPairing copies every channel's pairing data of from into to. A
// channel to holds with the same data is skipped; one it holds with other
// data is an error naming it unless overwrite. It returns the channels
// written.
func CopyPairing(ctx context.Context, from, to sessions.PairingState, overwrite bool) (int, error) {
	channels, err := from.PairingChannels(ctx)
	if err != nil {
		return 0, fmt.Errorf("sessions: copy pairing: %w", err)
	}
	n := 0
	for _, ch := range channels {
		d, err := from.LoadPairing(ctx, ch)
		if err != nil {
			return n, fmt.Errorf("sessions: copy pairing %q: %w", sessions.Clip(ch), err)
		}
		wrote := false
		err = to.UpdatePairing(ctx, ch, func(cur *pairstate.Data) (bool, error) {
			if samePairing(*cur, d) {
				return false, nil
			}
			if !emptyPairing(*cur) && !overwrite {
				return false, fmt.Errorf("the target holds other pairing data for channel %q; use --overwrite to replace it", sessions.Clip(ch))
			}
			*cur, wrote = clonePairing(d), true
			return true, nil
		})
		if err != nil {
			return n, fmt.Errorf("sessions: copy pairing %q: %w", sessions.Clip(ch), err)
		}
		if wrote {
			n++
		}
	}
	return n, nil
}

// ComparePairing returns the channels of a and the differences of b.
func ComparePairing(ctx context.Context, a, b sessions.PairingState) (int, []string, error) {
	channels, err := a.PairingChannels(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("sessions: compare pairing: %w", err)
	}
	var diffs []string
	for _, ch := range channels {
		da, err := a.LoadPairing(ctx, ch)
		if err != nil {
			return 0, nil, fmt.Errorf("sessions: compare pairing %q: %w", sessions.Clip(ch), err)
		}
		db, err := b.LoadPairing(ctx, ch)
		if err != nil {
			return 0, nil, fmt.Errorf("sessions: compare pairing %q: %w", sessions.Clip(ch), err)
		}
		if !samePairing(da, db) {
			diffs = append(diffs, fmt.Sprintf("pairing of channel %q differs in the target", sessions.Clip(ch)))
		}
	}
	return len(channels), diffs, nil
}

func emptyPairing(d pairstate.Data) bool { return len(d.Pending) == 0 && len(d.Allowed) == 0 }

func clonePairing(d pairstate.Data) pairstate.Data {
	return pairstate.Data{Pending: slices.Clone(d.Pending), Allowed: slices.Clone(d.Allowed)}
}

// samePairing compares at microseconds (PostgreSQL's resolution).
func samePairing(a, b pairstate.Data) bool {
	na, err1 := json.Marshal(pairingAtMicros(a))
	nb, err2 := json.Marshal(pairingAtMicros(b))
	return err1 == nil && err2 == nil && string(na) == string(nb)
}

func pairingAtMicros(d pairstate.Data) pairstate.Data {
	d = clonePairing(d)
	for i := range d.Pending {
		d.Pending[i].CreatedAt, d.Pending[i].ExpiresAt = micros(d.Pending[i].CreatedAt), micros(d.Pending[i].ExpiresAt)
	}
	for i := range d.Allowed {
		d.Allowed[i].ApprovedAt = micros(d.Allowed[i].ApprovedAt)
	}
	if len(d.Pending) == 0 {
		d.Pending = nil
	}
	if len(d.Allowed) == 0 {
		d.Allowed = nil
	}
	return d
}
