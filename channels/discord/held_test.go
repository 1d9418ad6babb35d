package discord

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/discord/discordtest"
)

// TestMessageNotTakenComesAgain: a message the handler cannot take (its
// storage full: channels.ErrUnavailable, "not accepted, it will be
// redelivered") is not given up for good once later messages of its
// channel are taken: when the storage is back it reaches the handler,
// once, without a reconnect, and the channel's cursor then moves on.
func TestMessageNotTakenComesAgain(t *testing.T) {
	fake := discordtest.New(fakeOptions())
	defer fake.Close()
	store := &memCursors{}
	a, err := New("default", Config{Token: "tok"}, Options{HTTPClient: fake.Client(), Logger: zaptest.NewLogger(t), Cursors: store})
	if err != nil {
		t.Fatal(err)
	}
	a.heldEvery = 20 * time.Millisecond
	var full atomic.Bool
	failures := make(chan struct{}, 16)
	got := make(chan channels.Inbound, 64)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- a.Run(ctx, func(_ context.Context, in channels.Inbound) error {
			if in.Text == "while full" && full.Load() {
				select {
				case failures <- struct{}{}:
				default:
				}
				return fmt.Errorf("journal: %w: no space left on device", channels.ErrUnavailable)
			}
			got <- in
			return nil
		})
	}()
	defer func() { cancel(); <-done }()
	if err := fake.WaitReady(ctxT(t), 1, 0); err != nil {
		t.Fatal(err)
	}
	first := fake.SendMessageCreate(&discordgo.Message{ChannelID: dmID, Author: alice, Content: "first"})
	if in := nextIn(t, got); in.MessageID != first {
		t.Fatalf("got %+v", in)
	}
	full.Store(true)
	lost := fake.SendMessageCreate(&discordgo.Message{ChannelID: dmID, Author: alice, Content: "while full"})
	for range 3 { // the handler's tries
		select {
		case <-failures:
		case <-time.After(15 * time.Second):
			t.Fatal("the message never reached the handler")
		}
	}
	later := fake.SendMessageCreate(&discordgo.Message{ChannelID: dmID, Author: alice, Content: "later"})
	if in := nextIn(t, got); in.MessageID != later {
		t.Fatalf("got %+v, want the later message", in)
	}
	full.Store(false)
	if in := nextIn(t, got); in.MessageID != lost {
		t.Fatalf("got %+v, want the message not taken before (%s)", in, lost)
	}
	marker := fake.SendMessageCreate(&discordgo.Message{ChannelID: dmID, Author: alice, Content: "marker"})
	if in := nextIn(t, got); in.MessageID != marker {
		t.Fatalf("got %+v after the retry, want the marker (nothing twice)", in)
	}
	// The cursor is noted once the handler returned.
	for wctx := ctxT(t); ; time.Sleep(time.Millisecond) {
		if c, _ := a.seen.get(dmID); c.id == marker {
			break
		}
		if wctx.Err() != nil {
			c, _ := a.seen.get(dmID)
			t.Fatalf("cursor %+v, want the marker %s", c, marker)
		}
	}
}
