package transfer

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/gateway/gateway/sessions"
)

// everything is the limit that keeps every entry a room log holds: the
// source already applied the room's own limits when they were added.
var everything = sessions.HistoryLimits{Count: math.MaxInt32, MaxBytes: 0}

// CopyRooms copies the kept room history of from (which must implement
// RoomLister) into to, room by room, oldest first. Entries get the
// target's sequence numbers (a turn recorded in a transcript before the
// copy cuts by the source's numbers: migrate a stopped daemon's state). A
// room the target holds with the same messages is skipped; one it holds
// with others is an error naming it unless overwrite, which clears it
// first. It returns the entries written.
func CopyRooms(ctx context.Context, from, to sessions.RoomLog, overwrite bool) (int, error) {
	rooms, err := roomsOf(ctx, from)
	if err != nil {
		return 0, fmt.Errorf("sessions: copy rooms: %w", err)
	}
	n := 0
	for _, room := range rooms {
		src, err := from.Take(room, from.Seq(), everything)
		if err != nil {
			return n, fmt.Errorf("sessions: copy rooms %q: %w", sessions.Clip(room), err)
		}
		have, err := to.Take(room, to.Seq(), everything)
		if err != nil {
			return n, fmt.Errorf("sessions: copy rooms %q: %w", sessions.Clip(room), err)
		}
		if len(have) > 0 {
			if sameRoom(src, have) {
				continue
			}
			if !overwrite {
				return n, fmt.Errorf("sessions: copy rooms: the target holds other history for room %q; use --overwrite to replace it", sessions.Clip(room))
			}
			if err := to.Clear(room); err != nil {
				return n, fmt.Errorf("sessions: copy rooms %q: clear: %w", sessions.Clip(room), err)
			}
		}
		for _, e := range src {
			e.Seq = 0
			dup, err := to.Append(ctx, room, e, everything)
			if err != nil {
				return n, fmt.Errorf("sessions: copy rooms %q: %w", sessions.Clip(room), err)
			}
			if dup {
				// The target removed this message id earlier (a turn took it,
				// or --overwrite cleared it) and keeps refusing it as a
				// redelivery: say so rather than drop it.
				return n, fmt.Errorf("sessions: copy rooms %q: the target took or removed message %q before and refuses it as a redelivery; copy into a target without this room's history",
					sessions.Clip(room), sessions.Clip(e.MessageID))
			}
			n++
		}
	}
	return n, nil
}

// CompareRooms returns how many room entries a holds and the rooms whose
// history b lacks or holds otherwise.
func CompareRooms(ctx context.Context, a, b sessions.RoomLog) (int, []string, error) {
	rooms, err := roomsOf(ctx, a)
	if err != nil {
		return 0, nil, fmt.Errorf("sessions: compare rooms: %w", err)
	}
	n := 0
	var diffs []string
	for _, room := range rooms {
		ea, err := a.Take(room, a.Seq(), everything)
		if err != nil {
			return n, nil, fmt.Errorf("sessions: compare rooms %q: %w", sessions.Clip(room), err)
		}
		eb, err := b.Take(room, b.Seq(), everything)
		if err != nil {
			return n, nil, fmt.Errorf("sessions: compare rooms %q: %w", sessions.Clip(room), err)
		}
		n += len(ea)
		if !sameRoom(ea, eb) {
			diffs = append(diffs, fmt.Sprintf("room history of %q differs in the target (%d entries, target %d)", sessions.Clip(room), len(ea), len(eb)))
		}
	}
	return n, diffs, nil
}

func roomsOf(ctx context.Context, l sessions.RoomLog) ([]string, error) {
	ls, ok := l.(sessions.RoomLister)
	if !ok {
		return nil, fmt.Errorf("%T cannot list its rooms", l)
	}
	return ls.Rooms(ctx)
}

// sameRoom compares two rooms' entries without their sequence numbers, at
// the microsecond (a database keeps no finer time).
func sameRoom(a, b []sessions.HistoryEntry) bool {
	return slices.EqualFunc(a, b, func(x, y sessions.HistoryEntry) bool {
		return x.MessageID == y.MessageID && x.SenderID == y.SenderID && x.SenderName == y.SenderName &&
			x.Text == y.Text && micros(x.At).Equal(micros(y.At))
	})
}
