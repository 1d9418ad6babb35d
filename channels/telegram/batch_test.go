package telegram_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// TestBatchWaitGatesOffset: a handler may defer its durability wait to the
// end of the getUpdates batch (channels.Batch, used by room history): the
// offset moves past the batch only after every wait returned, and a failed
// wait gets the batch delivered again.
func TestBatchWaitGatesOffset(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	var (
		mu        sync.Mutex
		calls     = map[string]int{}
		early     []string // waits that found their update already confirmed
		failFirst = true
	)
	ids := map[string]int{}
	h := func(ctx context.Context, in channels.Inbound) error {
		b := channels.BatchFrom(ctx)
		if b == nil {
			t.Error("polling handler called without a batch")
			return nil
		}
		mu.Lock()
		calls[in.Text]++
		id := ids[in.Text]
		mu.Unlock()
		b.Defer(func() error {
			mu.Lock()
			defer mu.Unlock()
			if srv.Confirmed() > id {
				early = append(early, in.Text)
			}
			if in.Text == "one" && failFirst {
				failFirst = false
				return errors.New("fsync failed")
			}
			return nil
		})
		return nil
	}
	mu.Lock()
	for _, text := range []string{"one", "two", "three"} {
		ids[text] = srv.DM(alice, text)
	}
	last := ids["three"]
	mu.Unlock()
	run(t, newAdapter(t, srv, baseConfig(srv), nil), h)
	waitConfirmed(t, srv, last)
	mu.Lock()
	defer mu.Unlock()
	if len(early) != 0 {
		t.Errorf("updates confirmed before their batch's wait: %v", early)
	}
	if calls["one"] != 2 || calls["three"] != 2 {
		t.Errorf("handler calls %v, want each update twice (the failed wait redelivers the batch)", calls)
	}
}
