package discord

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
)

// sinkTransport answers every request at once after reading its body, so
// a benchmark measures the client's side of an upload only.
type sinkTransport struct{ answer string }

func (s sinkTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(s.answer)), Request: r}, nil
}

// BenchmarkSendMediaAttachment is the media send path of one attachment
// with a caption and a nonce (multipart body built in one buffer) per
// size; SetBytes makes ns/op read as MB/s.
func BenchmarkSendMediaAttachment(b *testing.B) {
	for _, mb := range []int{1, 8} {
		b.Run(strconv.Itoa(mb)+"MB", func(b *testing.B) {
			a, err := New("default", Config{Token: "tok"}, Options{Logger: zap.NewNop(),
				HTTPClient: &http.Client{Transport: sinkTransport{answer: `{"id":"1","channel_id":"600"}`}}})
			if err != nil {
				b.Fatal(err)
			}
			data := bytes.Repeat([]byte{0xab}, mb<<20)
			m := channels.OutMedia{Kind: channels.MediaImage, MimeType: "image/png", FileName: "p.png", Size: int64(len(data)),
				SHA256: strings.Repeat("a", 64)}
			out := channels.Outbound{Address: channels.Address{ChatID: "600"}, DeliveryID: "reply-1",
				Media: []channels.MediaGroup{{Items: []channels.OutMedia{m}, Caption: "a caption"}}}
			open := func(channels.OutMedia) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
			c := channels.MediaChunk{Group: 0, Items: []int{0}, Caption: "a caption"}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := a.SendMedia(context.Background(), out, 0, c, open); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
