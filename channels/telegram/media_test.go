package telegram_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// A photo offers several sizes: the largest that fits under mediaMaxMb is
// taken, then fetched with getFile and a download from /file/bot<token>/.
func TestPhotoLargestSizeThatFitsIsFetched(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	small := srv.AddFile(telegramtest.File{Path: "photos/small.jpg", Data: []byte("small"), ContentType: "image/jpeg"})
	mid := srv.AddFile(telegramtest.File{Path: "photos/mid.jpg", Data: bytes.Repeat([]byte("m"), 1000), ContentType: "image/jpeg"})
	huge := srv.AddFile(telegramtest.File{Path: "photos/huge.jpg", Data: []byte("h"), Size: 3 << 20})
	cfg := baseConfig(srv)
	cfg.MediaMaxMb = 2
	a, rec := startPolling(t, srv, cfg)
	u, _ := srv.AddMessage(telegramtest.Message{ChatID: alice, Caption: "what is it?",
		Extra: map[string]any{"photo": telegramtest.PhotoSizes([]string{small, mid, huge}, []int{5, 1000, 3 << 20})}})
	waitConfirmed(t, srv, u)
	got := rec.accepted()
	if len(got) != 1 || len(got[0].Attachments) != 1 {
		t.Fatalf("accepted %+v", got)
	}
	att := got[0].Attachments[0]
	if att.Ref != mid || att.Kind != channels.MediaImage || att.Size != 1000 || got[0].Text != "what is it?" {
		t.Fatalf("attachment %+v text %q, want the 1000-byte size %s", att, got[0].Text, mid)
	}
	m, err := a.FetchMedia(testCtx(t), att, 2<<20)
	if err != nil {
		t.Fatalf("FetchMedia: %v", err)
	}
	body, err := io.ReadAll(m.Body)
	m.Body.Close()
	if err != nil || len(body) != 1000 || m.MimeType != "image/jpeg" {
		t.Fatalf("body %d bytes, mime %q, err %v", len(body), m.MimeType, err)
	}
	if calls := srv.GetFileCalls(); len(calls) != 1 || calls[0] != mid {
		t.Errorf("getFile calls %v", calls)
	}
	if d, err := srv.WaitDownloads(testCtx(t), 1); err != nil || len(d) != 1 || d[0].Path != "photos/mid.jpg" || d[0].Bytes != 1000 {
		t.Errorf("downloads %+v", d)
	}
}

// A file announced (by the message or by getFile) above the cap is never
// downloaded; one whose announcement lies is cut after the cap.
func TestFetchMediaTooLarge(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	cfg := baseConfig(srv)
	a, _ := startPolling(t, srv, cfg)
	big := srv.AddFile(telegramtest.File{Data: []byte("x"), Size: 5 << 20})
	liar := srv.AddFile(telegramtest.File{Data: bytes.Repeat([]byte("y"), 32<<20), Size: 10, Chunked: true})
	refused := srv.AddFile(telegramtest.File{Data: []byte("z"), Size: 30 << 20}) // the Bot API refuses getFile

	tests := []struct {
		name string
		att  channels.Attachment
	}{
		{"size in the message", channels.Attachment{Ref: big, Size: 5 << 20}},
		{"size from getFile", channels.Attachment{Ref: big}},
		{"getFile refuses", channels.Attachment{Ref: refused}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := a.FetchMedia(testCtx(t), tc.att, 1<<20)
			var tl *channels.MediaTooLargeError
			if !errors.As(err, &tl) || !errors.Is(err, channels.ErrMediaTooLarge) || tl.Max != 1<<20 {
				t.Fatalf("err %v, want MediaTooLargeError", err)
			}
		})
	}
	if d := srv.Downloads(); len(d) != 0 {
		t.Fatalf("downloads %+v, want none", d)
	}
	m, err := a.FetchMedia(testCtx(t), channels.Attachment{Ref: liar}, 1<<20)
	if err != nil {
		t.Fatalf("FetchMedia: %v", err)
	}
	n, err := io.Copy(io.Discard, m.Body)
	m.Body.Close()
	if !errors.Is(err, channels.ErrMediaTooLarge) || n > 1<<20+1 {
		t.Fatalf("read %d bytes, err %v", n, err)
	}
	if d, err := srv.WaitDownloads(testCtx(t), 1); err != nil || len(d) != 1 || d[0].Bytes >= 32<<20 {
		t.Errorf("downloads %+v, want one cut short", d)
	}
}
