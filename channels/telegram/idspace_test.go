package telegram_test

import (
	"testing"

	"github.com/gateway/gateway/channels/telegram"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// TestOffsetOfAnotherIDSpaceIsLeft: the saved offset belongs to ids
// Telegram no longer uses (the account's token now names another bot, the
// apiRoot another Bot API server, or Telegram chose new ids after a week
// without updates). Telegram then answers from the head of its queue with
// ids below the offset: they are new updates, delivered and confirmed, and
// the offset follows Telegram's ids from there (no poll loop re-reading
// the same head, no update lost).
func TestOffsetOfAnotherIDSpaceIsLeft(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	store := telegram.FileOffsetStore(t.TempDir())
	const oldBotOffset = 700_000_000
	if err := store.Save(testCtx(t), "default", oldBotOffset); err != nil {
		t.Fatal(err)
	}
	u1, m1 := srv.AddMessage(telegramtest.Message{ChatID: alice, Text: "hello new bot"})
	rec := newRecorder()
	stop := run(t, newAdapter(t, srv, baseConfig(srv), store), rec.handle)
	rec.waitCalls(t, 1)
	waitConfirmed(t, srv, u1)
	u2, m2 := srv.AddMessage(telegramtest.Message{ChatID: alice, Text: "and again"})
	waitConfirmed(t, srv, u2)
	stop()

	got := rec.accepted()
	if len(got) != 2 || got[0].MessageID != id(m1) || got[1].MessageID != id(m2) {
		t.Fatalf("accepted %+v, want the two messages %d and %d once each", got, m1, m2)
	}
	if off, err := store.Load(testCtx(t), "default"); err != nil || off != u2+1 {
		t.Errorf("saved offset %d (%v), want %d: Telegram's ids, not the old bot's", off, err, u2+1)
	}
}
