package dispatch

import (
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/discord"
	"github.com/gateway/gateway/channels/discord/discordtest"
)

func discordStreaming(t *testing.T, mode string, m *stepModel) (*harness, *discordtest.Server) {
	t.Helper()
	fake := discordtest.New(discordtest.Options{Token: "tok", NoEcho: true})
	t.Cleanup(fake.Close)
	h := newHarness(t, "", nil)
	useProvider(t, h, m)
	startDiscord(t, h, fake)
	rt := *h.d.Runtime()
	rt.Room = func(in channels.Inbound) channels.Room {
		r := channels.DefaultRoom(in.Channel)
		r.Streaming = mode
		return r
	}
	h.d.SetRuntime(&rt)
	return h, fake
}

// TestDiscordPartialAndProgress: on Discord a partial answer is edited in
// place and ends as the reply's first part (the second part posted new);
// a progress status is posted, edited at most once a second, and deleted
// once the answer is posted.
func TestDiscordPartialAndProgress(t *testing.T) {
	piece := strings.Repeat("word ", 50) // ten of them: 2,500 characters, two parts or more
	m := &stepModel{tools: 1, pause: 400 * time.Millisecond, answer: []string{"Hi", " there\n\n",
		piece, piece, piece, piece, piece, piece, piece, piece, piece, piece}}
	h, fake := discordStreaming(t, channels.StreamPartial, m)
	h.handle(in("discord", "777", "tell me"))
	h.drained()
	parts := channels.SplitMarkdown(strings.Join(m.answer, ""), discord.MaxMessageLen)
	vis := fake.Visible("777")
	if len(vis) != len(parts) || len(parts) < 2 {
		t.Fatalf("channel shows %d messages, want the %d parts", len(vis), len(parts))
	}
	for i := range parts {
		if vis[i].Content != parts[i] {
			t.Errorf("message %d differs from part %d", i, i)
		}
	}
	if n := len(fake.Sent()); n != len(parts) {
		t.Errorf("%d posts, want the draft and the parts after the first", n)
	}
	if len(fake.Edits()) < 2 {
		t.Errorf("draft edited %d times, want it to follow the stream and end as the answer", len(fake.Edits()))
	}

	m2 := &stepModel{tools: 7, pause: 400 * time.Millisecond, answer: []string{"done"}}
	h2, fake2 := discordStreaming(t, channels.StreamProgress, m2)
	h2.handle(in("discord", "888", "work"))
	h2.drained()
	eventually(t, "the status to be deleted", func() bool { return len(fake2.Deletions()) == 1 })
	sent := fake2.Sent()
	if len(sent) != 2 || !strings.HasPrefix(sent[0].Content, statusThinking) || sent[1].Content != "done" || sent[1].Reference == nil {
		t.Fatalf("posts = %+v, want the status then the answer as a reply", sent)
	}
	if vis := fake2.Visible("888"); len(vis) != 1 || vis[0].Content != "done" {
		t.Errorf("channel shows %+v, want only the answer", vis)
	}
	// The spacing of edits is the shared per-chat gate (see the Telegram
	// and fake-time tests); here: the status followed the turn.
	if len(fake2.Edits()) == 0 {
		t.Fatal("status never edited")
	}
}
