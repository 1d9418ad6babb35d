package discord

import (
	"context"
	"errors"
	"io"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/discord/discordtest"
)

// TestFetchMediaOnlyFromTheCDN: an attachment URL on Discord's CDN is
// downloaded; any other host (from a crafted message) is refused without a
// request; an announced size above the cap is refused without a download.
func TestFetchMediaOnlyFromTheCDN(t *testing.T) {
	fake := discordtest.New(discordtest.Options{Token: "tok"})
	t.Cleanup(fake.Close)
	a, err := New("default", Config{Token: "tok"}, Options{HTTPClient: fake.Client(), Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	at := fake.AddAttachment(dmID, "cat.png", "image/png", []byte("png bytes"))
	m, err := a.FetchMedia(context.Background(), channels.Attachment{Ref: at.URL, Size: int64(at.Size)}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(m.Body)
	m.Body.Close()
	if err != nil || string(b) != "png bytes" || m.MimeType != "image/png" {
		t.Fatalf("got %q %q %v", b, m.MimeType, err)
	}
	for _, ref := range []string{
		"https://evil.example/attachments/1/2/x.png",
		"http://cdn.discordapp.com/attachments/1/2/x.png", // not https
		"https://user@cdn.discordapp.com/attachments/1/2/x.png",
		"file:///etc/passwd",
		"../../etc/passwd",
	} {
		if _, err := a.FetchMedia(context.Background(), channels.Attachment{Ref: ref}, 1<<20); err == nil {
			t.Errorf("%q was fetched", ref)
		}
	}
	_, err = a.FetchMedia(context.Background(), channels.Attachment{Ref: at.URL, Size: 5 << 20}, 1<<20)
	if !errors.Is(err, channels.ErrMediaTooLarge) {
		t.Fatalf("err %v, want too large", err)
	}
	if d := fake.Downloads(); len(d) != 1 {
		t.Fatalf("downloads %v, want only the first", d)
	}
}
