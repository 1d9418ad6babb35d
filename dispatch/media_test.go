package dispatch

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/anthropic"
	"github.com/gateway/gateway/agents/anthropic/anthropictest"
	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/agents/openai"
	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
)

// pngBytes is a 1×1 PNG.
var pngBytes, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

// mediaRig is a dispatcher with real providers (OpenAI-compatible and
// Anthropic fakes) and a real Telegram adapter polling a fake Bot API.
type mediaRig struct {
	t     *testing.T
	dir   string
	model string // "oa/gpt-4o", "oa/text-only", "an/claude-vision"
	oa    *openaitest.Server
	an    *anthropictest.Server
	tg    *telegramtest.Server
	mgr   *filestore.Manager
	d     *Dispatcher
	stop  func()
}

func newMediaRig(t *testing.T, model string) *mediaRig {
	r := &mediaRig{t: t, dir: t.TempDir(), model: model, oa: openaitest.NewServer(t), an: anthropictest.NewServer(t),
		tg: telegramtest.Start(t, telegramtest.Options{})}
	r.start(true)
	t.Cleanup(func() { r.close() })
	return r
}

// start opens the state dir and wires everything; poll starts the adapter.
func (r *mediaRig) start(poll bool) {
	t := r.t
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	mgr, err := filestore.Open(filestore.Options{StateDir: r.dir, CacheTTL: -1, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	oc := r.oa.ProviderConfig()
	oc.VisionModels = []string{"gpt-4o*"}
	oa, err := openai.New(openai.Config{Name: "oa", Provider: oc})
	if err != nil {
		t.Fatal(err)
	}
	ac := r.an.ProviderConfig()
	ac.VisionModels = []string{"*"}
	an, err := anthropic.New(anthropic.Config{Name: "an", Provider: ac})
	if err != nil {
		t.Fatal(err)
	}
	runner, err := agents.NewRunner(agents.Options{Sessions: mgr.Backend(), Providers: map[string]llm.Provider{"oa": oa, "an": an},
		Defaults: agents.Defaults{Model: agents.Model{Primary: r.model}}, Agents: []agents.Agent{{ID: "main"}}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	resolver, err := routing.NewResolver(routing.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rt := &Runtime{Resolver: resolver, Queue: DefaultQueue(), Media: Media{
		MaxBytes: func(channels.AccountKey) int64 { return 1 << 20 },
		Transcribe: func(ctx context.Context, audio io.Reader, name string) (string, error) {
			return oa.Transcribe(ctx, "whisper-1", audio, name)
		},
	}}
	d, err := New(Options{Sessions: mgr.Backend(), StateDir: mgr.StateDir(), Runner: runner, Logger: log}, rt)
	if err != nil {
		t.Fatal(err)
	}
	a, err := telegram.New("default", telegram.Config{Token: r.tg.Token(), APIRoot: r.tg.URL, PollTimeoutSeconds: 1},
		telegram.Options{HTTPClient: r.tg.Client(), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	d.Register(a)
	r.mgr, r.d = mgr, d
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if poll {
			_ = a.Run(ctx, d.Handle)
		} else {
			<-ctx.Done()
		}
	}()
	r.stop = func() { cancel(); <-done }
}

func (r *mediaRig) close() {
	if r.d == nil {
		return
	}
	r.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r.d.Shutdown(ctx)
	if err := r.mgr.Close(); err != nil {
		r.t.Errorf("close sessions: %v", err)
	}
	r.d = nil
}

// lastUserOpenAI waits for n model requests and returns the last user
// message's parts as "text:..." and "image:<url>" strings.
func (r *mediaRig) lastUserOpenAI(n int) []string {
	r.t.Helper()
	eventually(r.t, "the model request", func() bool { return len(r.oa.Requests()) >= n })
	reqs := r.oa.Requests()
	msgs := reqs[len(reqs)-1].Body.Messages
	m := msgs[len(msgs)-1]
	if m.Content != "" {
		return []string{"text:" + m.Content}
	}
	var out []string
	for _, p := range m.MultiContent {
		if p.ImageURL != nil {
			out = append(out, "image:"+p.ImageURL.URL)
		} else {
			out = append(out, "text:"+p.Text)
		}
	}
	return out
}

func (r *mediaRig) session() sessions.Entry {
	r.t.Helper()
	st, err := r.mgr.Store("main")
	if err != nil {
		r.t.Fatal(err)
	}
	es, err := st.List()
	if err != nil || len(es) != 1 {
		r.t.Fatalf("sessions %v, %v", es, err)
	}
	return es[0]
}

func photoMessage(fileID string, size int, caption string) telegramtest.Message {
	return telegramtest.Message{ChatID: 111, Caption: caption,
		Extra: map[string]any{"photo": telegramtest.PhotoSizes([]string{fileID}, []int{size})}}
}

// TestTelegramPhotoReachesOpenAIAsImage: a photo becomes an image block in
// the transcript (pi's format) and an image_url data: URL in the request;
// the download is stored 0600 in a 0700 directory of the session and is
// removed when the session is reset and the media are pruned.
func TestTelegramPhotoReachesOpenAIAsImage(t *testing.T) {
	r := newMediaRig(t, "oa/gpt-4o")
	id := r.tg.AddFile(telegramtest.File{Path: "photos/file_1.jpg", Data: pngBytes, ContentType: "image/png"})
	r.tg.AddMessage(photoMessage(id, len(pngBytes), "what is this?"))
	got := r.lastUserOpenAI(1)
	want := []string{"text:what is this?", "image:data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes)}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("user message parts %q, want %q", got, want)
	}
	e := r.session()
	hist := historyOf(t, r.mgr, e)
	if len(hist) < 1 || len(hist[0].Content) != 2 || hist[0].Content[1].Type != sessions.BlockImage ||
		hist[0].Content[1].MimeType != "image/png" || hist[0].Content[1].Data != base64.StdEncoding.EncodeToString(pngBytes) {
		t.Fatalf("transcript user message %+v", hist)
	}
	dir := filepath.Join(r.dir, "media", "main", e.SessionID)
	files, err := os.ReadDir(dir)
	if err != nil || len(files) != 1 {
		t.Fatalf("media dir: %v %v", files, err)
	}
	assertMode(t, dir, 0o700)
	assertMode(t, filepath.Join(dir, files[0].Name()), 0o600)
	if data, _ := os.ReadFile(filepath.Join(dir, files[0].Name())); !bytes.Equal(data, pngBytes) {
		t.Error("stored file differs from the download")
	}

	// The session is reset: its downloads go with it; a live session's stay.
	st, _ := r.mgr.Store("main")
	key, _ := routing.Parse(e.SessionKey)
	if _, err := st.Reset(context.Background(), key, sessions.ResetOptions{}); err != nil {
		t.Fatal(err)
	}
	r.tg.AddMessage(photoMessage(id, len(pngBytes), "again"))
	r.lastUserOpenAI(2)
	fresh := filepath.Join(r.dir, "media", "main", r.session().SessionID)
	if n, err := r.d.PruneMedia(); err != nil || n != 1 {
		t.Fatalf("PruneMedia = %d, %v; want 1 session removed", n, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("media of the reset session still there: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil || fresh == dir {
		t.Fatalf("media of the current session: %v", err)
	}
	// Deleting the session removes the rest.
	if err := st.Delete(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if n, err := r.d.PruneMedia(); err != nil || n != 1 {
		t.Fatalf("PruneMedia after delete = %d, %v", n, err)
	}
}

func assertMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != want {
		t.Errorf("%s mode %v, want %v", path, fi.Mode().Perm(), want)
	}
}

func historyOf(t *testing.T, mgr *filestore.Manager, e sessions.Entry) []sessions.Message {
	t.Helper()
	st, err := mgr.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := st.Transcript(e.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := tr.History(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// TestTelegramPhotoReachesAnthropicAsImage: the same photo reaches an
// Anthropic model as an image block with a base64 source.
func TestTelegramPhotoReachesAnthropicAsImage(t *testing.T) {
	r := newMediaRig(t, "an/claude-vision")
	id := r.tg.AddFile(telegramtest.File{Data: pngBytes, ContentType: "image/png"})
	r.tg.AddMessage(photoMessage(id, len(pngBytes), "and this?"))
	eventually(t, "the model request", func() bool { return len(r.an.Requests()) >= 1 })
	u := r.an.Requests()[0].LastUser()
	if len(u.Content) != 2 || u.Content[0].Type != "text" || u.Content[0].Text != "and this?" || u.Content[1].Type != "image" ||
		u.Content[1].Source == nil || u.Content[1].Source.Type != "base64" || u.Content[1].Source.MediaType != "image/png" ||
		u.Content[1].Source.Data != base64.StdEncoding.EncodeToString(pngBytes) {
		t.Fatalf("user message %+v", u)
	}
}
