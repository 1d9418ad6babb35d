package filestore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gateway/gateway/sessions"
)

// TestMaxEntriesTwelveThousandCreatesNeverPassTheCap (issue 22): 12,000
// sessions created within a minute under maxEntries 5000 reached 10,543
// entries (a sweep after the fact, which never capped sessions created in
// the last minute). Now every creation that would pass the cap archives
// the oldest idle sessions in its own index write: the count is never over
// the cap when a creation returns, and no session with work pending in
// the journal (a record queued or in a turn, a reply not delivered) is
// archived.
func TestMaxEntriesTwelveThousandCreatesNeverPassTheCap(t *testing.T) {
	const (
		creates = 12_000
		limit   = 5000
		every   = 97 // every 97th session has work pending
	)
	if testing.Short() {
		t.Skip("-short: 12,000 index writes (CI and scripts/test run it)")
	}
	clk := newFakeClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	m := openTestManager(t, "", Options{Now: clk.Now,
		Maintenance: sessions.Maintenance{Mode: sessions.MaintenanceEnforce, MaxEntries: limit}})
	s := mustStore(t, m, "main")
	j := m.Journal()
	ctx := context.Background()
	busy := map[string]bool{}
	most := 0
	for i := range creates {
		k := dmKey(t, "main", fmt.Sprint("u", i))
		if i%every == 0 {
			// Accepted and started before its session exists, as a
			// message is journaled before its turn begins.
			id := fmt.Sprint("rec-", i)
			if _, err := j.Accept(ctx, sessions.Record{ID: id, AgentID: "main", SessionKey: k.String(), AcceptedAt: clk.Now()}); err != nil {
				t.Fatal(err)
			}
			if i%(2*every) == 0 {
				if err := j.Start(id); err != nil {
					t.Fatal(err)
				}
			}
			busy[k.String()] = true
		}
		mustBegin(t, s, k, sessions.Origin{Channel: "telegram", At: clk.Now()})
		s.mu.Lock()
		n := len(s.slots)
		s.mu.Unlock()
		most = max(most, n)
		if n > limit {
			t.Fatalf("%d entries after creation %d, maxEntries %d", n, i+1, limit)
		}
		if i%1000 == 999 {
			clk.Advance(time.Second) // 12,000 creations in 12 s
		}
	}
	for k := range busy {
		s.mu.Lock()
		_, ok := s.slots[k]
		s.mu.Unlock()
		if !ok {
			t.Errorf("session %s archived with work pending", k)
		}
	}
	t.Logf("%d creations, maxEntries %d: at most %d entries; %d sessions with pending work all kept", creates, limit, most, len(busy))
}

// TestMaxEntriesKeptWhenEverySessionHasWork: when every session over the
// cap has work pending, a creation still succeeds, the count stays over the
// cap, and a warning says so; once the work is done the next creation
// brings the count back under the cap.
func TestMaxEntriesKeptWhenEverySessionHasWork(t *testing.T) {
	clk := newFakeClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	core, logs := observer.New(zap.WarnLevel)
	m := openTestManager(t, "", Options{Now: clk.Now, Logger: zap.New(core),
		Maintenance: sessions.Maintenance{Mode: sessions.MaintenanceEnforce, MaxEntries: 3}})
	s := mustStore(t, m, "main")
	j := m.Journal()
	ctx := context.Background()
	var ids []string
	for i := range 5 {
		k := dmKey(t, "main", fmt.Sprint("u", i))
		id := fmt.Sprint("rec-", i)
		if _, err := j.Accept(ctx, sessions.Record{ID: id, AgentID: "main", SessionKey: k.String(), AcceptedAt: clk.Now()}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		mustBegin(t, s, k, sessions.Origin{Channel: "telegram", At: clk.Now()})
	}
	if es, _ := s.List(); len(es) != 5 {
		t.Fatalf("%d entries, want all 5 kept (each has work pending)", len(es))
	}
	if w := logs.FilterMessage("sessions over maintenance.maxEntries kept").All(); len(w) != 1 {
		t.Errorf("%d warnings of the cap not met, want 1 (at most one a minute)", len(w))
	}
	if err := j.Done(ids...); err != nil {
		t.Fatal(err)
	}
	mustBegin(t, s, dmKey(t, "main", "after"), sessions.Origin{Channel: "telegram", At: clk.Now()})
	if es, _ := s.List(); len(es) > 3 {
		t.Errorf("%d entries once the work was done, want at most 3", len(es))
	}
	if _, ok, _ := s.Get(dmKey(t, "main", "after")); !ok {
		t.Error("the session just created was archived")
	}
}
