package telegram_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// memMedia is an in-memory media store for the adapter's tests.
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

// sendAll sends every chunk of out as the outbox does.
func sendAll(t *testing.T, a interface {
	channels.Chunker
	channels.MediaSender
}, out channels.Outbound, open channels.MediaOpener) {
	t.Helper()
	ctx := testCtx(t)
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
		if err := a.SendChunk(ctx, out, i, c); err != nil {
			t.Fatalf("SendChunk %d: %v", i, err)
		}
	}
}

func TestSendMediaPhotoCaptionInTopic(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	a := newSender(t, srv)
	store := memMedia{}
	photo := store.add(channels.MediaImage, "image/png", "chart.png", []byte("\x89PNG fake chart"))
	long := strings.Repeat("word ", 300) // 1500 characters: over the caption limit
	out := channels.Outbound{Address: channels.Address{ChatID: id(int(forum)), ThreadID: "77", IsTopic: true},
		Text: "Here it is.", Media: []channels.MediaGroup{{Items: []channels.OutMedia{photo}, Caption: "**Sales** " + long}}}
	sendAll(t, a, out, store.open)
	got := srv.Sent()
	if len(got) != 3 {
		t.Fatalf("sent %d messages, want 3 (text, photo, caption rest): %+v", len(got), got)
	}
	if got[0].Method != "sendMessage" || got[0].Text != "Here it is." {
		t.Errorf("first message %+v, want the reply text", got[0])
	}
	p := got[1]
	if p.Method != "sendPhoto" || p.ThreadID != 77 || p.Upload == nil || p.Upload.SHA256 != photo.SHA256 || p.Upload.Name != "chart.png" {
		t.Errorf("photo %+v (upload %+v), want sendPhoto of chart.png in topic 77", p, p.Upload)
	}
	if !strings.HasPrefix(p.Text, "<b>Sales</b> word") || p.ParseMode != "HTML" || len([]rune(p.Text)) > 1024+7 {
		t.Errorf("caption %q (%s), want the formatted head of the caption", p.Text, p.ParseMode)
	}
	if got[2].Method != "sendMessage" || got[2].ThreadID != 77 || !strings.HasPrefix(got[2].Text, "word") {
		t.Errorf("caption rest %+v, want a text message in the topic", got[2])
	}
}

func TestSendMediaAlbums(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	a := newSender(t, srv)
	store := memMedia{}
	var items []channels.OutMedia
	for i := range 12 {
		items = append(items, store.add(channels.MediaImage, "image/jpeg", "p.jpg", []byte{0xff, 0xd8, byte(i)}))
	}
	voice := store.add(channels.MediaVoice, "audio/ogg", "note.ogg", []byte("OggS voice"))
	doc := store.add(channels.MediaDocument, "application/pdf", "a.pdf", []byte("%PDF-1.4"))
	items = append(items, voice, doc)
	out := channels.Outbound{Address: channels.Address{ChatID: "111"},
		Media: []channels.MediaGroup{{Items: items, Caption: "twelve pictures"}}}
	chunks := a.Chunks(out)
	if len(chunks) != 4 {
		t.Fatalf("%d chunks, want 4 (album of 10, album of 2, voice, document)", len(chunks))
	}
	sendAll(t, a, out, store.open)
	got := srv.Sent()
	if len(got) != 14 {
		t.Fatalf("sent %d messages, want 14", len(got))
	}
	methods := map[string]int{}
	for _, s := range got {
		methods[s.Method]++
	}
	if methods["sendMediaGroup"] != 12 || methods["sendVoice"] != 1 || methods["sendDocument"] != 1 {
		t.Errorf("methods %v", methods)
	}
	if got[0].Text != "twelve pictures" || got[1].Text != "" || got[10].Text != "" {
		t.Errorf("captions %q %q %q: want the caption on the first album's first photo only", got[0].Text, got[1].Text, got[10].Text)
	}
	if got[0].MediaGroupID == got[10].MediaGroupID {
		t.Errorf("albums share media group %q", got[0].MediaGroupID)
	}
}

func TestSendMediaOverTelegramLimitFallsBack(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	a := newSender(t, srv)
	big := channels.OutMedia{Kind: channels.MediaVideo, MimeType: "video/mp4", FileName: "big.mp4", Size: 60 << 20, SHA256: strings.Repeat("a", 64)}
	out := channels.Outbound{Address: channels.Address{ChatID: "111"}, Media: []channels.MediaGroup{{Items: []channels.OutMedia{big}}}}
	sendAll(t, a, out, memMedia{}.open) // never opened
	got := srv.Sent()
	if len(got) != 1 || got[0].Method != "sendMessage" || !strings.Contains(got[0].Text, "big.mp4 (60.0 MB) could not be attached") {
		t.Fatalf("sent %+v, want one text fallback naming the file", got)
	}
}

// A group whose first file is over Telegram's limit keeps its caption:
// the notice is its own message, and the caption goes with the next file
// (here a photo) or, with none, as text after the notice.
func TestSendMediaOverLimitKeepsCaption(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	a := newSender(t, srv)
	store := memMedia{}
	big := channels.OutMedia{Kind: channels.MediaVideo, MimeType: "video/mp4", FileName: "big.mp4", Size: 60 << 20, SHA256: strings.Repeat("a", 64)}
	photo := store.add(channels.MediaImage, "image/png", "chart.png", []byte("\x89PNG fake chart"))
	out := channels.Outbound{Address: channels.Address{ChatID: "111"}, Media: []channels.MediaGroup{
		{Items: []channels.OutMedia{big, photo}, Caption: "the sales video and its chart"},
		{Items: []channels.OutMedia{big}, Caption: "the video again"},
	}}
	sendAll(t, a, out, store.open)
	var texts []string
	for _, s := range srv.Sent() {
		texts = append(texts, s.Method+": "+s.Text)
	}
	want := []string{
		"sendMessage: 📎 big.mp4 (60.0 MB) could not be attached: over Telegram's 50 MB limit for bots.",
		"sendPhoto: the sales video and its chart",
		"sendMessage: 📎 big.mp4 (60.0 MB) could not be attached: over Telegram's 50 MB limit for bots.",
		"sendMessage: the video again",
	}
	if strings.Join(texts, "\n") != strings.Join(want, "\n") {
		t.Fatalf("sent:\n%s\nwant:\n%s", strings.Join(texts, "\n"), strings.Join(want, "\n"))
	}
}

// TestSendMediaRetries: a file send meets what a text send meets, and
// gets past it the same way (the one retry loop of send.go): a caption
// whose entities Telegram rejects goes again as plain text (the library's
// upload error carries no error code: upload restores it), a 429 is
// waited out, and a group's migration is followed to the supergroup.
func TestSendMediaRetries(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	a := newSender(t, srv)
	store := memMedia{}
	photo := store.add(channels.MediaImage, "image/png", "chart.png", []byte("\x89PNG fake chart"))
	const oldID, newID = int64(-4201), int64(-1004201)
	srv.FailNext("sendPhoto",
		telegramtest.Failure{Code: 400, Description: "Bad Request: can't parse entities: Unsupported start tag \"b\" at byte offset 0"},
		telegramtest.Failure{Code: 429, RetryAfter: 1},
		telegramtest.Failure{Code: 400, Description: "Bad Request: group chat was upgraded to a supergroup chat", MigrateTo: newID})
	out := channels.Outbound{Address: channels.Address{ChatID: id(int(oldID))},
		Media: []channels.MediaGroup{{Items: []channels.OutMedia{photo}, Caption: "**Sales**"}}}
	sendAll(t, a, out, store.open)
	got := srv.Sent()
	if len(got) != 1 {
		t.Fatalf("sent %+v, want the photo once", got)
	}
	if p := got[0]; p.Method != "sendPhoto" || p.ChatID != newID || p.Text != "**Sales**" || p.ParseMode != "" {
		t.Errorf("photo %+v, want sendPhoto to %d with the caption as plain text", p, newID)
	}
	if n := srv.Calls("sendPhoto"); n != 4 {
		t.Errorf("sendPhoto called %d times, want 4", n)
	}
	if err := a.Send(testCtx(t), channels.Outbound{Address: channels.Address{ChatID: id(int(oldID))}, Text: "after"}); err != nil {
		t.Fatal(err)
	}
	if s := srv.Sent(); s[len(s)-1].ChatID != newID {
		t.Errorf("text after the migration went to %d, want %d", s[len(s)-1].ChatID, newID)
	}
}
