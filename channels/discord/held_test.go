package discord

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/access"
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
	t.Cleanup(fake.Close) // after the adapter stops (runFullJournal)
	store := &memCursors{}
	a, full, failures, got := runFullJournal(t, fake, store)
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

// TestHeldMessageDeletedReleasesItsChannel: a message not taken in an
// outage holds its channel's cursor until it is taken; when its author
// deletes it meanwhile (the bot did not answer, so they post it again),
// the channel must not stay held at it for good: once the storage is
// back the cursor moves on to the channel's newest message (else the
// channel is read again from the deleted message every few seconds for
// the life of the process, and after a restart every message since is
// handed over again: refusal notices and pairing codes sent twice).
func TestHeldMessageDeletedReleasesItsChannel(t *testing.T) {
	fake := discordtest.New(fakeOptions())
	t.Cleanup(fake.Close) // after the adapter stops (runFullJournal)
	a, full, failures, got := runFullJournal(t, fake, &memCursors{})
	full.Store(true)
	lost := fake.SendMessageCreate(&discordgo.Message{ChannelID: dmID, Author: alice, Content: "while full"})
	for range 3 { // the handler's tries
		select {
		case <-failures:
		case <-time.After(15 * time.Second):
			t.Fatal("the message never reached the handler")
		}
	}
	fake.DeleteMessage(dmID, lost)
	again := fake.SendMessageCreate(&discordgo.Message{ChannelID: dmID, Author: alice, Content: "posted again"})
	if in := nextIn(t, got); in.MessageID != again {
		t.Fatalf("got %+v, want the message posted again", in)
	}
	full.Store(false)
	for wctx := ctxT(t); ; time.Sleep(time.Millisecond) {
		c, _ := a.seen.get(dmID)
		if c.id == again && len(a.seen.heldChannels()) == 0 {
			break
		}
		if wctx.Err() != nil {
			t.Fatalf("cursor %+v, held %v; want the cursor at %s and nothing held (%s was deleted)", c, a.seen.heldChannels(), again, lost)
		}
	}
}

// TestHeldThreadDeletedReleasesIt: a thread held at a message not taken in
// an outage is released when the thread is deleted (its history answers
// 404 Unknown Channel for good): it is not read again every few seconds,
// with a warning each time, for the life of the process.
func TestHeldThreadDeletedReleasesIt(t *testing.T) {
	fake := discordtest.New(fakeOptions())
	defer fake.Close()
	off := false
	a, err := New("default", Config{Token: "tok"}, newRules(t, access.Config{RequireMention: &off}).options(Options{
		HTTPClient: fake.Client(), Logger: zaptest.NewLogger(t), Cursors: &memCursors{}}))
	if err != nil {
		t.Fatal(err)
	}
	a.heldEvery = 20 * time.Millisecond
	failures := make(chan struct{}, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- a.Run(ctx, func(_ context.Context, in channels.Inbound) error {
			select {
			case failures <- struct{}{}:
			default:
			}
			return fmt.Errorf("journal: %w: no space left on device", channels.ErrUnavailable)
		})
	}()
	defer func() { cancel(); <-done }()
	if err := fake.WaitReady(ctxT(t), 1, 0); err != nil {
		t.Fatal(err)
	}
	fake.SendMessageCreate(&discordgo.Message{ChannelID: threadID, Author: alice, Content: "in the thread"})
	for range 3 { // the handler's tries
		select {
		case <-failures:
		case <-time.After(15 * time.Second):
			t.Fatal("the message never reached the handler")
		}
	}
	for wctx := ctxT(t); ; time.Sleep(time.Millisecond) {
		if _, held := a.seen.heldChannels()[threadID]; held {
			break
		}
		if wctx.Err() != nil {
			t.Fatalf("thread not held: %v", a.seen.heldChannels())
		}
	}
	fake.DeleteChannel(threadID)
	for wctx := ctxT(t); len(a.seen.heldChannels()) != 0; time.Sleep(time.Millisecond) {
		if wctx.Err() != nil {
			t.Fatalf("held %v after the thread was deleted (history reads: %d)", a.seen.heldChannels(), fake.HistoryReads())
		}
	}
}

// runFullJournal runs an adapter on fake, ready, whose handler refuses a
// message "while full" as a full disk's journal does (ErrUnavailable) while
// full is set, signalling failures, and hands the others to got; the
// adapter stops when the test ends.
func runFullJournal(t *testing.T, fake *discordtest.Server, store CursorStore) (a *Adapter, full *atomic.Bool,
	failures chan struct{}, got chan channels.Inbound) {
	t.Helper()
	a, err := New("default", Config{Token: "tok"}, Options{HTTPClient: fake.Client(), Logger: zaptest.NewLogger(t), Cursors: store})
	if err != nil {
		t.Fatal(err)
	}
	a.heldEvery = 20 * time.Millisecond
	full = new(atomic.Bool)
	failures = make(chan struct{}, 16)
	got = make(chan channels.Inbound, 64)
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
	t.Cleanup(func() { cancel(); <-done })
	if err := fake.WaitReady(ctxT(t), 1, 0); err != nil {
		t.Fatal(err)
	}
	return a, full, failures, got
}
