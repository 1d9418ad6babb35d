package pgstore

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestJournalAcceptAndClaimSkipLocked(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	const n = 40
	for i := range n {
		rec := Record{AgentID: "main", SessionKey: "agent:main:telegram:group:1", Channel: "telegram", AccountID: "bot",
			MessageID: fmt.Sprint(i), Body: json.RawMessage(`{"text":"hi"}`)}
		if _, ok, err := db.Accept(ctx, rec); err != nil || !ok {
			t.Fatalf("accept %d: %v %v", i, ok, err)
		}
		if i%10 == 0 { // the platform delivered it twice
			if _, ok, err := db.Accept(ctx, rec); err != nil || ok {
				t.Fatalf("duplicate %d accepted: %v %v", i, ok, err)
			}
		}
	}
	// Concurrent claimers never get the same record.
	var mu sync.Mutex
	got := map[int64]string{}
	run(t, 8, func(w int) error {
		owner := fmt.Sprint("worker-", w)
		for {
			recs, err := db.Claim(ctx, owner, 3, time.Minute)
			if err != nil {
				return err
			}
			if len(recs) == 0 {
				return nil
			}
			mu.Lock()
			for _, r := range recs {
				if prev, dup := got[r.ID]; dup {
					mu.Unlock()
					return fmt.Errorf("record %d claimed by %s and %s", r.ID, prev, owner)
				}
				got[r.ID] = owner
			}
			mu.Unlock()
		}
	})
	if len(got) != n {
		t.Errorf("%d records claimed, want %d", len(got), n)
	}
	// A lease that ran out (its worker died) makes the record claimable again.
	db.now = func() time.Time { return time.Now().Add(2 * time.Minute) }
	again, err := db.Claim(ctx, "rescuer", n, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != n {
		t.Fatalf("reclaimed %d records, want %d", len(again), n)
	}
	if again[0].Attempts != 2 || string(again[0].Body) != `{"text":"hi"}` || again[0].ID > again[n-1].ID {
		t.Errorf("reclaimed record %+v, want 2 attempts, the body, oldest first", again[0])
	}
}
