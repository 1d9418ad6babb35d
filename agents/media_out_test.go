package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/agents/webfetch"
	"github.com/gateway/gateway/internal/mediastore"
	"github.com/gateway/gateway/sessions"
)

var pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR fake picture")

// mediaWorkspace is a workspace with a picture, an HTML page named like a
// picture, a file too large, and symlinks that lead out of it; outside is
// a secret beside it.
func mediaWorkspace(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(ws, "charts"), 0o700))
	must(os.MkdirAll(filepath.Join(base, "outside"), 0o700))
	must(os.WriteFile(filepath.Join(base, "outside", "secret.png"), pngBytes, 0o600))
	must(os.WriteFile(filepath.Join(ws, "charts", "q3.png"), pngBytes, 0o600))
	must(os.WriteFile(filepath.Join(ws, "page.png"), []byte("<!DOCTYPE html><html><script>alert(1)</script></html>"), 0o600))
	must(os.WriteFile(filepath.Join(ws, "big.png"), append(append([]byte{}, pngBytes...), bytes.Repeat([]byte{0}, 2<<20)...), 0o600))
	must(os.Symlink(filepath.Join(base, "outside", "secret.png"), filepath.Join(ws, "escape.png")))
	must(os.Symlink(filepath.Join(base, "outside"), filepath.Join(ws, "out")))
	must(os.Symlink("charts/q3.png", filepath.Join(ws, "inside.png"))) // a link that stays inside is fine
	return ws
}

// runSendMedia runs one turn whose model calls send_media with args and
// returns the turn's result and the tool result the model got.
func runSendMedia(t *testing.T, h *harness, args map[string]any) (Result, sessions.Message) {
	t.Helper()
	h.p.reply = func(n int, req llm.Request) (sessions.Message, error) {
		if n == 0 {
			return assistantCall("c1", MessageToolName, args), nil
		}
		return assistantText("done"), nil
	}
	k := h.key("main", "1")
	res, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: k, Inputs: []sessions.Message{user("go")}, Room: &fakeRoom{}})
	if err != nil {
		t.Fatal(err)
	}
	hist, _ := h.transcript("main", k).History(context.Background())
	var tr sessions.Message
	for _, m := range hist {
		if m.Role == sessions.RoleToolResult {
			tr = m
		}
	}
	return res, tr
}

func mediaHarness(t *testing.T, ws string) (*harness, *mediastore.Store) {
	t.Helper()
	h := newHarness(t, Defaults{Media: MediaOut{MaxMB: 1}},
		[]Agent{{ID: "main", Workspace: ws, Tools: Tools{Allow: []string{MessageToolName}}}}, nil)
	st := mediastore.New(filepath.Join(t.TempDir(), "media-out"))
	h.r.opts.Media = st
	return h, st
}

// TestSendMediaFromWorkspace: a file of the workspace is stored and
// attached; a path out of it (.., absolute, a symlink or a linked
// directory leading out) is refused without reading it, as is a type the
// config does not allow (sniffed from the bytes, whatever the name says)
// and a file over the cap.
func TestSendMediaFromWorkspace(t *testing.T) {
	ws := mediaWorkspace(t)
	cases := []struct {
		name, file, errText string
	}{
		{"inside", "charts/q3.png", ""},
		{"inside link", "inside.png", ""},
		{"dot dot", "../outside/secret.png", "outside the workspace"},
		{"absolute", filepath.Join(filepath.Dir(ws), "outside", "secret.png"), "relative to the workspace"},
		{"symlink out", "escape.png", "outside the workspace"},
		{"linked dir out", "out/secret.png", "outside the workspace"},
		{"missing", "nope.png", "no such file"},
		{"directory", "charts", "not a regular file"},
		{"html named png", "page.png", "text/html, which this gateway does not send"},
		{"too large", "big.png", "larger than the 1 MB"},
		{"unknown media id", "media:0123456789abcdef", "not a media id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, st := mediaHarness(t, ws)
			res, tr := runSendMedia(t, h, map[string]any{"action": "send_media", "files": []string{c.file}, "caption": "Q3 **sales**"})
			if c.errText != "" {
				if !tr.IsError || !strings.Contains(tr.Text(), c.errText) {
					t.Fatalf("tool result %q (error %v), want an error containing %q", tr.Text(), tr.IsError, c.errText)
				}
				if len(res.Media) != 0 {
					t.Errorf("refused file attached: %+v", res.Media)
				}
				return
			}
			if tr.IsError {
				t.Fatalf("tool result %q", tr.Text())
			}
			if len(res.Media) != 1 || len(res.Media[0].Files) != 1 || res.Media[0].Caption != "Q3 **sales**" {
				t.Fatalf("Result.Media = %+v", res.Media)
			}
			f := res.Media[0].Files[0]
			if f.Kind != "image" || f.MimeType != "image/png" || f.Size != int64(len(pngBytes)) || !st.Has(f.SHA256) {
				t.Errorf("file %+v (stored %v)", f, st.Has(f.SHA256))
			}
		})
	}
}

// TestSendMediaReusedReply: a reply found whole in the transcript (a
// restart after it was written, before the outbox stored it) carries the
// files its send_media calls attached.
func TestSendMediaReusedReply(t *testing.T) {
	h, _ := mediaHarness(t, mediaWorkspace(t))
	first, _ := runSendMedia(t, h, map[string]any{"action": "send_media", "files": []string{"charts/q3.png", "inside.png"}, "caption": "two"})
	if len(first.Media) != 1 || len(first.Media[0].Files) != 2 {
		t.Fatalf("first run media %+v", first.Media)
	}
	again, err := h.r.Run(context.Background(), Turn{AgentID: "main", Key: h.key("main", "1"), Reuse: true, Room: &fakeRoom{}})
	if err != nil {
		t.Fatal(err)
	}
	if again.Text != "done" || len(again.Media) != 1 || again.Media[0].Caption != "two" ||
		again.Media[0].Files[1].SHA256 != first.Media[0].Files[1].SHA256 {
		t.Fatalf("reused reply %q media %+v, want the first run's", again.Text, again.Media)
	}
}

// TestSendMediaOfToolImage: an MCP tool's image block is stored and named
// by a media id the model can pass to send_media.
func TestSendMediaOfToolImage(t *testing.T) {
	h, st := mediaHarness(t, "")
	s := &session{media: &turnMedia{}}
	blocks := h.r.noteImageBlocks(s, []sessions.Content{{Type: sessions.BlockImage, MimeType: "image/png",
		Data: "iVBORw0KGgoAAAANSUhEUg=="}})
	if len(blocks) != 2 || !strings.Contains(blocks[1].Text, "media:") {
		t.Fatalf("blocks %+v, want the image and a note naming its media id", blocks)
	}
	id := blocks[1].Text[strings.Index(blocks[1].Text, "media:") : strings.Index(blocks[1].Text, "media:")+22]
	f, ok := s.media.lookup(id)
	if !ok || !st.Has(f.SHA256) || f.MimeType != "image/png" {
		t.Fatalf("media id %q: %+v %v", id, f, ok)
	}
}

func TestSniffType(t *testing.T) {
	cases := []struct {
		head []byte
		name string
		want string
	}{
		{pngBytes, "x.bin", "image/png"},
		{[]byte("OggS\x00\x02"), "v.ogg", "audio/ogg"},
		{[]byte("a,b\n1,2\n"), "t.csv", "text/csv"},
		{[]byte("<svg xmlns='http://www.w3.org/2000/svg'></svg>"), "x.svg", "text/plain"}, // never image/svg+xml: no script runs
		{[]byte{0, 1, 2, 3, 0xfe}, "x.svg", "application/octet-stream"},
		{[]byte{0, 1, 2, 3, 0xfe}, "x.m4a", "audio/mp4"},
	}
	for _, c := range cases {
		if got := sniffType(c.head, c.name); got != c.want && !(c.name == "x.m4a" && strings.HasPrefix(got, "audio/")) {
			t.Errorf("sniffType(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestSendMediaOfFetchedImage: an image web_fetch fetched is stored and
// named by a media id in the tool result (not its bytes), so the model can
// send it with send_media; without a chat turn it is only described.
func TestSendMediaOfFetchedImage(t *testing.T) {
	img := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(pngBytes)
	}))
	defer img.Close()
	h, st := mediaHarness(t, "")
	fetch := webfetch.New(webfetch.Options{Permit: func(a netip.Addr) bool { return a == netip.MustParseAddr("127.0.0.1") }})
	res, err := fetch.Fetch(context.Background(), img.URL+"/charts/q3.png", 0)
	if err != nil {
		t.Fatal(err)
	}
	s := &session{media: &turnMedia{}, log: zap.NewNop()}
	h.r.noteFetchedImage(s, &res)
	f, ok := s.media.lookup(res.Media)
	if !ok || !st.Has(f.SHA256) || f.MimeType != "image/png" || f.Size != int64(len(pngBytes)) {
		t.Fatalf("media id %q: %+v %v", res.Media, f, ok)
	}
	if !strings.Contains(res.Note, res.Media) || res.Image != nil {
		t.Errorf("result note %q, image kept %v", res.Note, res.Image != nil)
	}
	b, _ := json.Marshal(res)
	if strings.Contains(string(b), "iVBOR") || !strings.Contains(string(b), `"media":"media:`) {
		t.Errorf("tool result %s: want the media id and no image bytes", b)
	}
	res, _ = fetch.Fetch(context.Background(), img.URL+"/x.png", 0)
	h.r.noteFetchedImage(&session{log: zap.NewNop()}, &res)
	if res.Media != "" || res.Image != nil {
		t.Errorf("outside a chat turn: media %q", res.Media)
	}
}
