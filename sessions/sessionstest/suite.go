// Package sessionstest is the conformance suite of the session layer's
// seam (SPEC §3.8): the behaviour every backend must show, written once as
// tests over the interfaces (the pattern of testing/fstest.TestFS).
// TestIndex covers sessions.Index, TestTranscripts sessions.TranscriptLog
// (through sessions.AgentStore), TestDelivery sessions.Delivery,
// TestRoomLog sessions.RoomLog, TestPairing and TestCursors the pairing and
// cursor state; the benchmarks run the same work on each backend so their
// figures compare. The files backend runs them from sessions/filestore, the
// PostgreSQL backend from sessions/pgstore.
//
// Only tests import this package. The suites run their cases as parallel
// subtests, each on a new store from the caller's opener.
package sessionstest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// Options are what a case asks of a new index.
type Options struct {
	// Now is the index's clock (filestore.Options.Now, pgstore.Options.Now).
	// It returns whole seconds in UTC, which every backend stores exactly.
	Now func() time.Time
	// Reset is the reset policy Begin evaluates.
	Reset sessions.ResetConfig
	// Share, when set, is an index this Opener returned earlier: the new
	// one is a second handle on the same storage, as another process
	// would open it (a second Manager on the state directory, a second
	// pool on the database), not a copy of Share in memory.
	Share sessions.Index
}

// Opener returns a new, empty index (or, with o.Share, a second handle on
// Share's storage) whose clock and reset policies are o's. It releases
// what it opened when t ends (t.Cleanup).
type Opener func(t *testing.T, o Options) sessions.Index

// TestIndex runs the conformance suite against the indexes open returns.
func TestIndex(t *testing.T, open Opener) {
	cases := []struct {
		name string
		run  func(t *testing.T, open Opener)
	}{
		{"CreateOnFirstBegin", testCreate},
		{"TouchOnLaterBegin", testTouch},
		{"ForeignAgentKey", testForeignKey},
		{"ResetIdle", testResetIdle},
		{"ResetDaily", testResetDaily},
		{"ResetDailyTimezone", testResetDailyZone},
		{"ResetByType", testResetByType},
		{"ResetOffByDefault", testResetOff},
		{"ResetClockIgnoresInternalWork", testResetInternal},
		{"ResetBacklogNotBornIdle", testResetBacklog},
		{"ResetJudgedAtArrival", testResetAtArrival},
		{"ResetJudgedWhenSentAcrossDowntime", testResetDowntime},
		{"ResetNeverRollsSubagentOver", testResetSubagent},
		{"ManualReset", testManualReset},
		{"ArchivedIsCapped", testArchivedCap},
		{"Counters", testCounters},
		{"CountersConcurrent", testCountersConcurrent},
		{"Patch", testPatch},
		{"ChatSettings", testChatSettings},
		{"EntryLevels", testEntryLevels},
		{"DeliveryContextStored", testDeliveryContext},
		{"SubagentSpawnOptionsStored", testSubagentSpawnOptions},
		{"DeleteAndRecover", testDelete},
		{"DeleteArchived", testDeleteArchived},
		{"SwitchBack", testSwitch},
		{"SwitchRefusesStrangers", testSwitchStrangers},
		{"RenameKey", testRename},
		{"RenameKeyRefusals", testRenameRefusals},
		{"RenameKeyConcurrent", testRenameConcurrent},
		{"ListAndRecentOrder", testOrder},
		{"GetByID", testGetByID},
		{"HostileKeysAndIDs", testHostile},
		{"ConcurrentBeginCreatesOnce", testConcurrentCreate},
		{"ConcurrentBeginRollsOverOnce", testConcurrentRollover},
		{"ConcurrentBeginManyKeys", testConcurrentKeys},
		{"DurableAcrossHandles", testDurable},
		{"TwoHandlesLoseNothing", testTwoHandles},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, open)
		})
	}
}

// t0 is when every case starts: noon UTC, whole seconds.
var t0 = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

// clock is a settable clock shared by a case and its index.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// fixture is one case's index and clock.
type fixture struct {
	t     *testing.T
	open  Opener
	reset sessions.ResetConfig
	idx   sessions.Index
	clk   *clock
	ctx   context.Context
}

func newFixture(t *testing.T, open Opener, reset sessions.ResetConfig) *fixture {
	t.Helper()
	clk := &clock{t: t0}
	idx := open(t, Options{Now: clk.Now, Reset: reset})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return &fixture{t: t, open: open, reset: reset, idx: idx, clk: clk, ctx: ctx}
}

// key is a group conversation key of the index's agent on telegram.
func (f *fixture) key(peer string) routing.Key {
	f.t.Helper()
	return f.keyOf(routing.Group, peer)
}

func (f *fixture) keyOf(kind routing.PeerKind, peer string) routing.Key {
	f.t.Helper()
	k, err := routing.PeerKey(f.idx.AgentID(), "telegram", "", kind, peer)
	if err != nil {
		f.t.Fatalf("PeerKey(%q): %v", peer, err)
	}
	return k
}

func (f *fixture) begin(k routing.Key, o sessions.Origin) (sessions.Entry, sessions.BeginInfo) {
	f.t.Helper()
	e, info, err := f.idx.Begin(f.ctx, k, o)
	if err != nil {
		f.t.Fatalf("Begin(%s): %v", k, err)
	}
	return e, info
}

// get returns key's entry and fails the test when there is none.
func (f *fixture) get(k routing.Key) sessions.Entry {
	f.t.Helper()
	e, ok, err := f.idx.Get(k)
	if err != nil || !ok {
		f.t.Fatalf("Get(%s) = %v, %v; want the entry", k, ok, err)
	}
	return e
}

func (f *fixture) absent(k routing.Key) {
	f.t.Helper()
	if e, ok, err := f.idx.Get(k); err != nil || ok {
		f.t.Fatalf("Get(%s) = %+v, %v, %v; want no entry", k, e, ok, err)
	}
}

func (f *fixture) archived(k routing.Key) []sessions.Archived {
	f.t.Helper()
	a, err := f.idx.Archived(k)
	if err != nil {
		f.t.Fatalf("Archived(%s): %v", k, err)
	}
	return a
}

func (f *fixture) flush() {
	f.t.Helper()
	if err := f.idx.Flush(f.ctx); err != nil {
		f.t.Fatalf("Flush: %v", err)
	}
}

// same fails unless the stored entry equals what a method returned.
func (f *fixture) same(what string, want sessions.Entry) {
	f.t.Helper()
	if diff := cmp.Diff(want, f.get(keyOf(f.t, want))); diff != "" {
		f.t.Errorf("%s: Get differs from the returned entry (-returned +stored):\n%s", what, diff)
	}
}

func keyOf(t *testing.T, e sessions.Entry) routing.Key {
	t.Helper()
	k, err := routing.Parse(e.SessionKey)
	if err != nil {
		t.Fatalf("entry key %q does not parse: %v", e.SessionKey, err)
	}
	return k
}

// ids lists the session ids of archived sessions, newest first.
func ids(as []sessions.Archived) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.SessionID
	}
	return out
}

func wantNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("%s: error %v, want sessions.ErrNotFound", what, err)
	}
}

// idle is a policy that resets every session after n minutes without input.
func idle(n int) sessions.ResetConfig {
	return sessions.ResetConfig{Reset: sessions.ResetPolicy{Mode: sessions.ResetIdle, IdleMinutes: &n}}
}

// daily is a policy that resets every session at hour:00 in zone.
func daily(hour int, zone string) sessions.ResetConfig {
	return sessions.ResetConfig{Reset: sessions.ResetPolicy{Mode: sessions.ResetDaily, AtHour: &hour, Timezone: zone}}
}
