package discord

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/channels"
)

// sendAsync runs Send on its own goroutine; the channel gets its error.
func sendAsync(ctx context.Context, a *Adapter, chat, text string) <-chan error {
	done := make(chan error, 1)
	go func() { done <- a.Send(ctx, channels.Outbound{Address: channels.Address{ChatID: chat}, Text: text}) }()
	return done
}

// returned waits for a call started on its own goroutine (sendAsync); it
// fails the test when the call is still blocked long after it should have
// returned.
func returned(t *testing.T, done <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(15 * time.Second):
		t.Fatalf("%s: still blocked", what)
	}
	return nil
}

// TestSendRateLimitWaitEndsWithContext: a 429 whose retry_after is
// within MaxRetryAfter is waited out, but only as long as the caller's
// context lives (discordgo's own wait ignores it: a shutdown or a
// bounded call would hang for the whole retry_after).
func TestSendRateLimitWaitEndsWithContext(t *testing.T) {
	fo := fakeOptions()
	fo.NoEcho = true
	core, logs := observer.New(zap.InfoLevel)
	h := startWith(t, Config{}, fo, Options{Logger: zap.New(zapcore.NewTee(core, zaptest.NewLogger(t).Core()))})
	h.fake.RateLimitPostsFor(1, 40*time.Second, false)
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	done := sendAsync(ctx, h.a, channelID, "hello")
	// The 429 reached the adapter (cancelling earlier would only cut the
	// request short).
	wctx := ctxT(t)
	for logs.FilterMessage("rate limited").Len() == 0 {
		if wctx.Err() != nil {
			t.Fatal("the 429 never reached the adapter")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := returned(t, done, "context cancelled during a 40 s retry_after"); err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("Send = %v, want the context's end", err)
	}
	if sent := h.fake.Sent(); len(sent) != 0 {
		t.Fatalf("posted %+v", sent)
	}
}

// TestSendLongRateLimitAnswered: a retry_after beyond MaxRetryAfter is
// not waited out: Send returns at once an error that says nothing was
// posted (channels.Answered) and how long to wait (channels.RetryAfter),
// the route stays held without asking Discord again (no 429 storm), and
// other channels' routes are not held. A global 429 holds every route.
func TestSendLongRateLimitAnswered(t *testing.T) {
	fo := fakeOptions()
	fo.NoEcho = true
	h := start(t, Config{}, fo)
	h.fake.RateLimitPostsFor(1, time.Hour, false)
	err := returned(t, sendAsync(ctxT(t), h.a, channelID, "one"), "retry_after of an hour")
	if err == nil || !channels.Answered(err) || channels.RetryAfter(err) < 59*time.Minute {
		t.Fatalf("Send = %v (answered %v, retry after %s), want a rate limit of about an hour",
			err, channels.Answered(err), channels.RetryAfter(err))
	}
	err = returned(t, sendAsync(ctxT(t), h.a, channelID, "two"), "held route")
	if err == nil || channels.RetryAfter(err) <= 0 {
		t.Fatalf("second Send = %v, want the held rate limit", err)
	}
	if n := h.fake.RateLimited(); n != 1 {
		t.Fatalf("Discord asked %d times during the hold, want once", n)
	}
	if err := returned(t, sendAsync(ctxT(t), h.a, dmID, "elsewhere"), "another route"); err != nil {
		t.Fatalf("another channel's Send = %v", err)
	}

	h.fake.RateLimitPostsFor(1, time.Hour, true)
	if err := returned(t, sendAsync(ctxT(t), h.a, dmID, "global"), "global limit"); channels.RetryAfter(err) < 59*time.Minute {
		t.Fatalf("Send under a global 429 = %v", err)
	}
	if err := returned(t, sendAsync(ctxT(t), h.a, threadID, "other route"), "global hold"); channels.RetryAfter(err) <= 0 {
		t.Fatalf("Send on another route during a global hold = %v", err)
	}
	if n, sent := h.fake.RateLimited(), h.fake.Sent(); n != 2 || len(sent) != 1 || sent[0].Content != "elsewhere" {
		t.Fatalf("429s %d, posts %+v; want 2 and only the other channel's", n, sent)
	}
}

// TestTypingRateLimitReturnsAtOnce: the typing indicator is best effort;
// a 429 on it is returned at once (the dispatcher waits for a typing call
// in flight before it sends the reply: a wait here would hold the reply
// back for the whole retry_after), and the route stays held.
func TestTypingRateLimitReturnsAtOnce(t *testing.T) {
	h := start(t, Config{}, fakeOptions())
	h.fake.RateLimitTypingFor(1, 40*time.Second)
	out := channels.Outbound{Address: channels.Address{ChatID: channelID}}
	for i := range 2 {
		done := make(chan error, 1)
		go func() { done <- h.a.Typing(ctxT(t), out) }()
		if err := returned(t, done, "typing under a 40 s retry_after"); channels.RetryAfter(err) <= 0 {
			t.Fatalf("typing %d = %v, want the rate limit", i, err)
		}
	}
	if n := h.fake.RateLimited(); n != 1 {
		t.Fatalf("Discord asked %d times, want once", n)
	}
}

// TestSlashFollowupRateLimitAnswered: a 429 on a slash command's
// followup (a reply's later part) is handled like a post's: beyond
// MaxRetryAfter it is returned at once as a rate limit, not slept out
// regardless of the context (the outbox's lane would hang).
func TestSlashFollowupRateLimitAnswered(t *testing.T) {
	got := make(chan channels.Inbound, 8)
	fake, a := startSlashAdapter(t, Config{}, newRules(t, access.Config{}), multiGuildOptions(), accept(got))
	fake.SendInteraction(fake.SlashCommand(channelID, alice, "status", nil))
	in := <-got
	waitReplies(t, fake, 1)
	out := channels.Outbound{Address: channels.Address{Channel: Name, AccountID: "default", ChatID: in.ChatID},
		Interaction: in.Interaction}
	if err := a.SendChunk(ctxT(t), out, 0, "part one"); err != nil {
		t.Fatal(err)
	}
	fake.RateLimitFollowupsFor(1, time.Hour)
	done := make(chan error, 1)
	go func() { done <- a.SendChunk(ctxT(t), out, 1, "part two") }()
	err := returned(t, done, "followup under a retry_after of an hour")
	if !channels.Answered(err) || channels.RetryAfter(err) < 59*time.Minute {
		t.Fatalf("followup = %v, want the rate limit", err)
	}
	if s := fake.Sent(); len(s) != 0 {
		t.Fatalf("posted to the channel instead: %+v", s)
	}
}

// TestSendRateLimitReturnedToAParkingCaller: a post whose caller waits
// rate limits out itself (the outbox on a lane, channels.ReturnRateLimits)
// gets a short 429 back at once with its retry_after: the adapter does
// not wait it out in place, where the wait would hold the caller's
// concurrency slot and queue other chats' replies behind this chat's.
func TestSendRateLimitReturnedToAParkingCaller(t *testing.T) {
	fo := fakeOptions()
	fo.NoEcho = true
	h := start(t, Config{}, fo)
	h.fake.RateLimitPostsFor(1, 20*time.Second, false)
	ctx := channels.ReturnRateLimits(ctxT(t))
	err := returned(t, sendAsync(ctx, h.a, channelID, "hello"), "a 20 s retry_after for a caller that parks")
	if got := channels.RetryAfter(err); got < 19*time.Second || !channels.Answered(err) {
		t.Fatalf("Send = %v (retry after %s, answered %v), want the 429 of about 20 s at once",
			err, got, channels.Answered(err))
	}
	if n, sent := h.fake.RateLimited(), h.fake.Sent(); n != 1 || len(sent) != 0 {
		t.Fatalf("429s %d, posts %+v; want one 429 and nothing posted", n, sent)
	}
}
