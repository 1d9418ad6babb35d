package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transfer"
)

// verifyMigration checks the copy: counts and every key's state and
// transcript lines (transfer.Compare), then `sessions show KEY --context
// --json` rendered from both sides for every session. Any difference is
// printed and makes the command exit 1.
func verifyMigration(ctx context.Context, out io.Writer, from, to *side, workers int) error {
	start := time.Now()
	c, err := transfer.Compare(ctx, from, to, workers)
	if err != nil {
		return fmt.Errorf("storage migrate: verify: %w", err)
	}
	diffs := c.Differences
	if c.Source != c.Target {
		diffs = append(diffs, fmt.Sprintf("counts differ: %s has %+v, %s %+v", from.Kind(), c.Source, to.Kind(), c.Target))
	}
	shown, showDiffs, err := compareShows(ctx, from, to)
	if err != nil {
		return fmt.Errorf("storage migrate: verify: %w", err)
	}
	diffs = append(diffs, showDiffs...)
	dc, deliveryDiffs, err := compareDelivery(from, to)
	if err != nil {
		return fmt.Errorf("storage migrate: verify: %w", err)
	}
	diffs = append(diffs, deliveryDiffs...)
	channels, pairingDiffs, err := transfer.ComparePairing(ctx, from.pairing, to.pairing)
	if err != nil {
		return fmt.Errorf("storage migrate: verify: %w", err)
	}
	diffs = append(diffs, pairingDiffs...)
	cursors, cursorDiffs, err := transfer.CompareCursors(ctx, from.cursors, to.cursors)
	if err != nil {
		return fmt.Errorf("storage migrate: verify: %w", err)
	}
	diffs = append(diffs, cursorDiffs...)
	roomEntries, roomDiffs, err := transfer.CompareRooms(ctx, from.rooms, to.rooms)
	if err != nil {
		return fmt.Errorf("storage migrate: verify: %w", err)
	}
	diffs = append(diffs, roomDiffs...)
	counters, limitDiffs, err := transfer.CompareLimits(ctx, from.limits, to.limits)
	if err != nil {
		return fmt.Errorf("storage migrate: verify: %w", err)
	}
	diffs = append(diffs, limitDiffs...)
	if len(diffs) > 0 {
		fmt.Fprintf(out, "verify: %d difference(s) between %s and %s:\n", len(diffs), from.Kind(), to.Kind())
		for _, d := range diffs {
			fmt.Fprintf(out, "  %s\n", d)
		}
		return fmt.Errorf("storage migrate: verification failed: %w", errProblems)
	}
	fmt.Fprintf(out, "verified: counts equal (%d session keys, %d transcript entries); `sessions show --context --json` identical for %d sessions; "+
		"journal holds the %d pending records, %d unsent replies and %d drafts; pairing of %d channels and %d cursors equal; %d room history entries equal; %d budget counters equal (%s)\n",
		c.Source.Keys, c.Source.Lines, shown, dc.Pending, dc.Replies, dc.Drafts, channels, cursors, roomEntries, counters, time.Since(start).Round(time.Millisecond))
	if c.Extra > 0 {
		fmt.Fprintf(out, "note: the %s target also holds %d session key(s) the source does not have\n", to.Kind(), c.Extra)
	}
	return nil
}

// compareShows renders `sessions show KEY --context --json` for every
// current session of from on both sides and compares the bytes. The
// entry's clocks are rendered at microseconds (UTC) on both sides, the
// resolution the copy keeps (see `storage migrate --help`).
func compareShows(ctx context.Context, from, to *side) (shown int, diffs []string, err error) {
	agents, err := from.ExportAgents(ctx)
	if err != nil {
		return 0, nil, err
	}
	for _, agent := range agents {
		keys, err := from.ExportKeys(ctx, agent)
		if err != nil {
			return 0, nil, err
		}
		sa, err := from.store(agent)
		if err != nil {
			return 0, nil, err
		}
		sb, err := to.store(agent)
		if err != nil {
			return 0, nil, err
		}
		for _, k := range keys {
			if k.Entry == nil {
				continue
			}
			a, err := renderShow(ctx, agent, sa, k.Key)
			if err != nil {
				return 0, nil, fmt.Errorf("%s %s/%s: %w", from.Kind(), agent, k.Key, err)
			}
			b, err := renderShow(ctx, agent, sb, k.Key)
			if err != nil {
				diffs = append(diffs, fmt.Sprintf("%s/%s: sessions show on %s: %v", agent, k.Key, to.Kind(), err))
				continue
			}
			shown++
			if !bytes.Equal(a, b) {
				diffs = append(diffs, fmt.Sprintf("%s/%s: sessions show --context --json differs (%d bytes on %s, %d on %s)",
					agent, k.Key, len(a), from.Kind(), len(b), to.Kind()))
			}
		}
	}
	return shown, diffs, nil
}

// renderShow is `sessions show KEY --context --json` for one key of st,
// with the entry's clocks at microseconds.
func renderShow(ctx context.Context, agent string, st sessions.AgentStore, key string) ([]byte, error) {
	k, err := routing.Parse(key)
	if err != nil {
		return nil, err
	}
	e, ok, err := st.Get(k)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("no current session")
	}
	t, err := st.Transcript(e.SessionID)
	if err != nil {
		return nil, err
	}
	v, err := showSession(ctx, agent, e.AtMicros(), t, true)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := printJSON(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// compareDelivery checks that new handles on the target hold the
// source's pending work.
func compareDelivery(from, to *side) (transfer.DeliveryCounts, []string, error) {
	a, doneA, err := from.delivery()
	if err != nil {
		return transfer.DeliveryCounts{}, nil, err
	}
	defer doneA()
	b, doneB, err := to.delivery()
	if err != nil {
		return transfer.DeliveryCounts{}, nil, err
	}
	defer doneB()
	return transfer.CompareDelivery(a, b)
}
