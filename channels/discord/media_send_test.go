package discord

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/discord/discordtest"
)

type memMedia map[string][]byte

func (m memMedia) add(kind channels.MediaKind, mimeType, name string, data []byte) channels.OutMedia {
	sum := sha256.Sum256(data)
	h := hex.EncodeToString(sum[:])
	m[h] = data
	return channels.OutMedia{Kind: kind, MimeType: mimeType, FileName: name, Size: int64(len(data)), SHA256: h}
}

func (m memMedia) open(f channels.OutMedia) (io.ReadCloser, error) {
	b, ok := m[f.SHA256]
	if !ok {
		return nil, errors.New("not stored")
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

// tierOptions is fakeOptions with the guild at a boost tier.
func tierOptions(tier discordgo.PremiumTier) discordtest.Options {
	fo := fakeOptions()
	fo.NoEcho = true
	fo.Guilds[0].PremiumTier = tier
	return fo
}

// waitChannelState waits until GUILD_CREATE put channelID in the state.
func waitChannelState(t *testing.T, a *Adapter) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := a.s.State.Channel(channelID); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("channel never reached the state")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func sendAllMedia(t *testing.T, a *Adapter, out channels.Outbound, open channels.MediaOpener) {
	t.Helper()
	ctx := ctxT(t)
	for i, c := range a.Chunks(out) {
		mc, isMedia, err := channels.DecodeMediaChunk(c)
		if err != nil {
			t.Fatal(err)
		}
		if isMedia {
			if _, err := a.SendMedia(ctx, out, i, mc, open); err != nil {
				t.Fatalf("SendMedia chunk %d: %v", i, err)
			}
			continue
		}
		if _, err := a.SendChunkID(ctx, out, i, c); err != nil {
			t.Fatalf("SendChunk %d: %v", i, err)
		}
	}
}

// Three images go as one message with three attachments and the caption;
// a resend of that chunk (same delivery) posts nothing new.
func TestSendMediaAlbumOnceWithNonce(t *testing.T) {
	h := start(t, Config{}, tierOptions(0))
	waitChannelState(t, h.a)
	store := memMedia{}
	var items []channels.OutMedia
	for i := range 3 {
		items = append(items, store.add(channels.MediaImage, "image/png", "p.png", []byte{0x89, 'P', 'N', 'G', byte(i)}))
	}
	out := channels.Outbound{Address: channels.Address{Channel: Name, AccountID: "default", ChatID: channelID},
		DeliveryID: "reply-1", Media: []channels.MediaGroup{{Items: items, Caption: "three"}}}
	sendAllMedia(t, h.a, out, store.open)
	sendAllMedia(t, h.a, out, store.open) // the outbox resending after a crash
	sent := h.fake.Sent()
	if len(sent) != 1 || len(sent[0].Files) != 3 || sent[0].Content != "three" || sent[0].Nonce == "" {
		t.Fatalf("posts %+v, want one message with 3 files, the caption and a nonce", sent)
	}
	if h.fake.NonceRepeats() != 1 {
		t.Errorf("%d resends answered by the first post, want 1", h.fake.NonceRepeats())
	}
	for i, f := range sent[0].Files {
		if f.SHA256 != items[i].SHA256 || f.ContentType != "image/png" {
			t.Errorf("file %d: %+v, want %s", i, f, items[i].SHA256)
		}
	}
}

// A file over the guild tier's limit is not attempted: a notice naming it
// and the limit takes its place; smaller files of the group still go. A
// tier 2 guild takes the same file.
func TestSendMediaOverTierLimit(t *testing.T) {
	// Limits of 1, 2, 3 and 4 MB stand for Discord's 10, 25, 50 and 100:
	// the same rule with uploads the race detector reads fast.
	big := bytes.Repeat([]byte{'x'}, 1<<20+1<<19) // over tier 0's limit, under tier 2's
	for _, tc := range []struct {
		tier     discordgo.PremiumTier
		attached int
	}{{0, 1}, {2, 2}} {
		fo := tierOptions(tc.tier)
		fo.UploadLimits = [4]int64{1 << 20, 2 << 20, 3 << 20, 4 << 20}
		h := start(t, Config{UploadLimitsMb: []int{1, 2, 3, 4}}, fo)
		waitChannelState(t, h.a)
		store := memMedia{}
		small := store.add(channels.MediaDocument, "application/pdf", "small.pdf", []byte("%PDF small"))
		large := store.add(channels.MediaDocument, "application/pdf", "large.pdf", big)
		out := channels.Outbound{Address: channels.Address{Channel: Name, AccountID: "default", ChatID: channelID},
			DeliveryID: "reply-1", Media: []channels.MediaGroup{{Items: []channels.OutMedia{small, large}}}}
		sendAllMedia(t, h.a, out, store.open)
		files := 0
		var notices []string
		for _, s := range h.fake.Sent() {
			files += len(s.Files)
			if len(s.Files) == 0 {
				notices = append(notices, s.Content)
			}
		}
		if files != tc.attached {
			t.Errorf("tier %d: %d files attached, want %d", tc.tier, files, tc.attached)
		}
		if tc.attached == 1 && (len(notices) != 1 || !strings.Contains(notices[0], "large.pdf (1.5 MB) could not be attached: over this server's 1 MB upload limit (boost tier 0)")) {
			t.Errorf("tier 0 notices %q, want one naming large.pdf and the limit", notices)
		}
		h.stop()
	}
}

// Discord's own 413 (a limit lower than configured) is a refusal the
// outbox turns into the text fallback.
func TestSendMedia413IsRefusal(t *testing.T) {
	fo := tierOptions(0)
	fo.UploadLimits = [4]int64{1 << 20, 1 << 20, 1 << 20, 1 << 20}
	h := start(t, Config{UploadLimitsMb: []int{500, 500, 500, 500}}, fo)
	waitChannelState(t, h.a)
	store := memMedia{}
	large := store.add(channels.MediaDocument, "application/pdf", "large.pdf", bytes.Repeat([]byte{'x'}, 1<<20+1))
	out := channels.Outbound{Address: channels.Address{Channel: Name, AccountID: "default", ChatID: channelID},
		DeliveryID: "reply-1", Media: []channels.MediaGroup{{Items: []channels.OutMedia{large}}}}
	chunks := h.a.Chunks(out)
	mc, _, _ := channels.DecodeMediaChunk(chunks[0])
	_, err := h.a.SendMedia(ctxT(t), out, 0, mc, store.open)
	if err == nil || !channels.Answered(err) || !strings.Contains(err.Error(), "40005") {
		t.Fatalf("SendMedia = %v, want Discord's refusal (413, 40005)", err)
	}
}
