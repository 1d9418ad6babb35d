package telegram_test

import (
	"testing"

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
