package telegram_test

import (
	"testing"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// TestAlbumFollowsItsCaptionMention: an album is one message per file,
// sharing a media_group_id, and only the first carries the caption. In a
// group that requires a mention, the album's other files follow the
// first's mention; an unaddressed album and a photo of another album do
// not get through.
func TestAlbumFollowsItsCaptionMention(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	_, rec := startPolling(t, srv, baseConfig(srv))
	photo := func(album, caption string) telegramtest.Message {
		return telegramtest.Message{ChatID: group, FromID: bob, Media: "photo", Caption: caption,
			Extra: map[string]any{"media_group_id": album}}
	}
	var want []int
	for _, m := range []struct {
		msg telegramtest.Message
		in  bool
	}{
		{photo("A1", "@"+srv.BotUserName()+" which one is sharper?"), true},
		{photo("A1", ""), true},
		{photo("A1", ""), true},
		{photo("B2", "our holiday"), false},
		{photo("B2", ""), false},
	} {
		_, mid := srv.AddMessage(m.msg)
		if m.in {
			want = append(want, mid)
		}
	}
	u := srv.Group(group, bob, "unrelated chatter")
	waitConfirmed(t, srv, u)
	got := rec.accepted()
	if len(got) != len(want) {
		t.Fatalf("accepted %d messages, want %d (the addressed album's three photos): %+v", len(got), len(want), got)
	}
	for i, in := range got {
		if in.MessageID != id(want[i]) || len(in.Attachments) != 1 || !in.Mentioned {
			t.Errorf("message %d: %+v, want message %d, one photo, addressed", i, in, want[i])
		}
	}
}

// A caption on a later file of an album addresses the files before it
// too, when they come in one getUpdates batch (as Telegram sends an album
// back to back): they were dropped as unaddressed.
func TestAlbumCaptionOnALaterFile(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	photo := func(album, caption string) telegramtest.Message {
		return telegramtest.Message{ChatID: group, FromID: bob, Media: "photo", Caption: caption,
			Extra: map[string]any{"media_group_id": album}}
	}
	var want []int
	for _, m := range []struct {
		msg telegramtest.Message
		in  bool
	}{
		{photo("C3", ""), true},
		{photo("C3", "@"+srv.BotUserName()+" which one is sharper?"), true},
		{photo("C3", ""), true},
		{photo("D4", ""), false},
		{photo("D4", "our holiday"), false},
	} {
		_, mid := srv.AddMessage(m.msg)
		if m.in {
			want = append(want, mid)
		}
	}
	u := srv.Group(group, bob, "unrelated chatter")
	_, rec := startPolling(t, srv, baseConfig(srv)) // the album is queued: one batch
	waitConfirmed(t, srv, u)
	got := rec.accepted()
	if len(got) != len(want) {
		t.Fatalf("accepted %d messages, want %d (the addressed album's three photos): %+v", len(got), len(want), got)
	}
	for i, in := range got {
		if in.MessageID != id(want[i]) || len(in.Attachments) != 1 || !in.Mentioned {
			t.Errorf("message %d: %+v, want message %d, one photo, addressed", i, in, want[i])
		}
	}
}

// An album whose caption is on a later file may come in two getUpdates
// batches (a backlog past the batch limit, or a poll answered before the
// album's last files arrived; a webhook posts each file on its own): the
// files before the caption were dropped as unaddressed before the caption
// was seen. They are held and handed over, in order, before the file that
// addresses the album; an album never addressed stays dropped.
func TestAlbumSplitAcrossBatchesKeepsEarlierFiles(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	_, rec := startPolling(t, srv, baseConfig(srv))
	photo := func(album, caption string) telegramtest.Message {
		return telegramtest.Message{ChatID: group, FromID: bob, Media: "photo", Caption: caption,
			Extra: map[string]any{"media_group_id": album}}
	}
	u1, m1 := srv.AddMessage(photo("E5", ""))
	uOther, _ := srv.AddMessage(photo("F6", "our holiday"))
	waitConfirmed(t, srv, max(u1, uOther)) // first batch: nothing addressed yet
	if got := rec.accepted(); len(got) != 0 {
		t.Fatalf("accepted %+v before the album was addressed", got)
	}
	_, m2 := srv.AddMessage(photo("E5", "@"+srv.BotUserName()+" which one is sharper?"))
	_, m3 := srv.AddMessage(photo("E5", ""))
	u := srv.Group(group, bob, "unrelated chatter")
	waitConfirmed(t, srv, u)
	got := rec.accepted()
	want := []int{m1, m2, m3}
	if len(got) != len(want) {
		t.Fatalf("accepted %d messages, want %d (the addressed album's three photos): %+v", len(got), len(want), got)
	}
	for i, in := range got {
		if in.MessageID != id(want[i]) || len(in.Attachments) != 1 || !in.Mentioned {
			t.Errorf("message %d: %+v, want message %d, one photo, addressed", i, in, want[i])
		}
	}
}

// A held file the Handler cannot take yet (the journal is down) is handed
// over again, before its album's addressing file, when that update is
// retried.
func TestHeldAlbumFileRetriedBeforeItsCaption(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	photo := func(caption string) telegramtest.Message {
		return telegramtest.Message{ChatID: group, FromID: bob, Media: "photo", Caption: caption,
			Extra: map[string]any{"media_group_id": "G7"}}
	}
	u1, m1 := srv.AddMessage(photo(""))
	rec := newRecorder()
	failed := false
	rec.fail = func(in channels.Inbound, _ int) error {
		if in.MessageID == id(m1) && !failed {
			failed = true
			return errJournalDown
		}
		return nil
	}
	run(t, newAdapter(t, srv, baseConfig(srv), nil), rec.handle)
	waitConfirmed(t, srv, u1)
	u2, m2 := srv.AddMessage(photo("@" + srv.BotUserName() + " compare"))
	waitConfirmed(t, srv, u2)
	got := rec.accepted()
	if len(got) != 2 || got[0].MessageID != id(m1) || got[1].MessageID != id(m2) || !failed {
		t.Fatalf("accepted %+v, want messages %d then %d after one failure", got, m1, m2)
	}
}
