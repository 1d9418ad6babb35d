package dispatch

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gateway/gateway/channels/web"
)

// postChat posts body to a web adapter wired to r's dispatcher and returns
// the status and the whole response (the SSE stream to its end).
func (r *mediaRig) postChat(body string) (int, string) {
	r.t.Helper()
	a := web.New(web.Options{})
	r.d.Register(a)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Run(ctx, r.d.Handle) }()
	defer func() { cancel(); <-done }()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/agents/{id}/chat", a.ServeChat)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	var status int
	var out string
	eventually(r.t, "the chat to be served", func() bool {
		res, err := http.Post(srv.URL+"/api/agents/main/chat", "application/json", strings.NewReader(body))
		if err != nil {
			return false
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		status, out = res.StatusCode, string(b)
		return res.StatusCode != http.StatusServiceUnavailable // Run installs the handler asynchronously
	})
	return status, out
}

// TestWebChatImageReachesVisionModel: images posted to the web chat reach
// a vision model as image parts, not as "[image]".
func TestWebChatImageReachesVisionModel(t *testing.T) {
	r := newMediaRig(t, "oa/gpt-4o")
	b64 := base64.StdEncoding.EncodeToString(pngBytes)
	status, out := r.postChat(`{"message":"what colour?","images":[{"data":"` + b64 + `","mimeType":"image/png"}]}`)
	if status != http.StatusOK || !strings.Contains(out, "event: done") {
		t.Fatalf("status %d, stream %q", status, out)
	}
	got := r.lastUserOpenAI(1)
	if want := []string{"text:what colour?", "image:data:image/png;base64," + b64}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("user message %q, want %q", got, want)
	}
}

// TestWebChatImagesAsPlainStrings: seed 000's chat API sends images as
// plain strings (data: URLs); they are taken beside the object form.
func TestWebChatImagesAsPlainStrings(t *testing.T) {
	r := newMediaRig(t, "oa/gpt-4o")
	b64 := base64.StdEncoding.EncodeToString(pngBytes)
	status, out := r.postChat(`{"message":"two?","images":["data:image/png;base64,` + b64 + `",{"data":"` + b64 + `"}]}`)
	if status != http.StatusOK || !strings.Contains(out, "event: done") {
		t.Fatalf("status %d, stream %q", status, out)
	}
	got := r.lastUserOpenAI(1)
	img := "image:data:image/png;base64," + b64
	if want := []string{"text:two?", img, img}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("user message %q, want %q", got, want)
	}
	if status, out := r.postChat(`{"message":"x","images":[{"data":"` + b64 + `","colour":"red"}]}`); status != http.StatusBadRequest || !strings.Contains(out, "colour") {
		t.Fatalf("an image object with an unknown field: %d %q, want 400 naming it", status, out)
	}
}

// TestWebChatImageRefused: what is not an image, or not what it claims,
// is refused with 400 before anything is accepted.
func TestWebChatImageRefused(t *testing.T) {
	r := newMediaRig(t, "oa/gpt-4o")
	tests := []struct{ name, images, want string }{
		{"not base64", `[{"data":"%%%"}]`, "not base64"},
		{"not an image", `[{"data":"` + base64.StdEncoding.EncodeToString([]byte("hello")) + `"}]`, "not an image"},
		{"wrong type", `[{"data":"` + base64.StdEncoding.EncodeToString(pngBytes) + `","mimeType":"image/jpeg"}]`, "mimeType"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, out := r.postChat(`{"message":"x","images":` + tc.images + `}`)
			if status != http.StatusBadRequest || !strings.Contains(out, tc.want) {
				t.Fatalf("status %d, body %q", status, out)
			}
		})
	}
	if n := len(r.oa.Requests()); n != 0 {
		t.Fatalf("%d model requests, want none", n)
	}
}
