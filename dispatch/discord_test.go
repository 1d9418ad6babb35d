package dispatch

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/discord"
	"github.com/gateway/gateway/channels/discord/discordtest"
)

// startDiscord registers a real Discord adapter whose REST calls go to a
// fake Discord (only Send is used: inbound messages are handed in directly).
func startDiscord(t *testing.T, h *harness, fake *discordtest.Server) {
	t.Helper()
	a, err := discord.New("default", discord.Config{Token: "tok"}, discord.Options{HTTPClient: fake.Client(), Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	h.d.Register(a)
}

// TestDiscordLongReplyAndRecovery: a long reply goes out as parts of at
// most 2,000 characters, each once; a reply left partly sent by a crash
// is finished after the restart with only the parts not yet delivered.
func TestDiscordLongReplyAndRecovery(t *testing.T) {
	long := strings.Repeat("word ", 900) // 4,500 characters: three parts
	m := &model{reply: func(llm.Request) (string, error) { return long, nil }}
	fake := discordtest.New(discordtest.Options{Token: "tok", NoEcho: true})
	t.Cleanup(fake.Close)
	h := newHarness(t, "", m)
	startDiscord(t, h, fake)
	msg := in("discord", "777", "tell me a lot")
	h.handle(msg)
	h.drained()
	sent := fake.Sent()
	if len(sent) != 3 {
		t.Fatalf("%d parts posted, want 3", len(sent))
	}
	var joined string
	for i, s := range sent {
		if n := len([]rune(s.Content)); n > discord.MaxMessageLen {
			t.Errorf("part %d has %d characters", i, n)
		}
		if (i == 0) != (s.Reference != nil) {
			t.Errorf("part %d reference %+v", i, s.Reference)
		}
		joined += s.Content + "\n" // separate messages: the white space at a cut is dropped
	}
	if strings.Join(strings.Fields(joined), " ") != strings.TrimSpace(long) {
		t.Error("the parts do not add up to the reply")
	}

	// A crash after the first part of the next reply: its record and the
	// reply are in the journal, one part marked sent.
	w := acceptOnly(t, h, in("discord", "777", "again"))
	appendTurn(t, h, w, long)
	chunks := h.d.adapter("discord", "default").(channels.Chunker).Chunks(channels.Outbound{Text: long})
	storeReply(t, h, w, chunks, 1)
	h.restart()
	startDiscord(t, h, fake)
	if _, err := h.d.Resume(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.drained()
	sent = fake.Sent()[3:]
	if len(sent) != len(chunks)-1 {
		t.Fatalf("%d parts posted after the restart, want %d", len(sent), len(chunks)-1)
	}
	for i, s := range sent {
		if s.Content != chunks[i+1] || s.Reference != nil || s.ChannelID != "777" {
			t.Errorf("resumed part %d: %+v", i, s)
		}
	}
	if n := len(m.requests()); n != 1 {
		t.Errorf("%d model calls, want 1 (the resumed reply is not generated again)", n)
	}
}

// TestDiscordSendWindowClosed: a process that died between Discord's
// acceptance of a part and the write of its sent mark leaves a part the
// next start sends again; on Discord that resend posts nothing new (the
// part's nonce, issue 22), so every part shows once. So does a part whose
// answer was lost and which the outbox retried at once.
func TestDiscordSendWindowClosed(t *testing.T) {
	long := strings.Repeat("word ", 900) // three parts
	m := &model{reply: func(llm.Request) (string, error) { return long, nil }}
	fake := discordtest.New(discordtest.Options{Token: "tok", NoEcho: true})
	t.Cleanup(fake.Close)
	h := newHarness(t, "", m)
	startDiscord(t, h, fake)

	// A reply with part 1 marked sent and part 2 posted by the dead
	// process, not marked.
	w := acceptOnly(t, h, in("discord", "777", "tell me a lot"))
	appendTurn(t, h, w, long)
	ad := h.d.adapter("discord", "default")
	chunks := ad.(channels.Chunker).Chunks(channels.Outbound{Text: long})
	rp := storeReply(t, h, w, chunks, 1)
	out := outboundFor(w.In)
	out.DeliveryID = rp.ID
	if err := ad.(channels.Chunker).SendChunk(h.ctx, out, 1, chunks[1]); err != nil {
		t.Fatal(err)
	}
	h.restart()
	startDiscord(t, h, fake)
	if _, err := h.d.Resume(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.drained()
	sent := fake.Sent()
	if len(sent) != 2 || sent[0].Content != chunks[1] || sent[1].Content != chunks[2] {
		t.Errorf("%d posts (part 2 by the dead process included), want parts 2 and 3 once each", len(sent))
	}
	if n := fake.NonceRepeats(); n != 1 {
		t.Errorf("%d resends answered by an earlier post, want 1 (part 2)", n)
	}
	uncertain := func(cause string) float64 {
		return testutil.ToFloat64(h.d.opts.Metrics.Uncertain.WithLabelValues("discord", cause))
	}
	if n := uncertain("resume"); n != 1 {
		t.Errorf("gateway_outbound_uncertain_total{cause=resume} = %v, want 1 (part 2, resumed)", n)
	}

	// A live reply whose first part's answer is lost: retried, shown once.
	defer func(r []time.Duration) { sendRetries = r }(sendRetries)
	sendRetries = []time.Duration{time.Millisecond}
	fake.LoseAnswerNext(1)
	h.handle(in("discord", "778", "and more"))
	h.drained()
	var to778 int
	for _, s := range fake.Sent() {
		if s.ChannelID == "778" {
			to778++
		}
	}
	if to778 != 3 || fake.NonceRepeats() != 2 {
		t.Errorf("%d parts posted to 778 (want 3) and %d resends answered by an earlier post (want 2)", to778, fake.NonceRepeats())
	}
	if n := uncertain("retry"); n != 1 {
		t.Errorf("gateway_outbound_uncertain_total{cause=retry} = %v, want 1 (the part whose answer was lost)", n)
	}
}
