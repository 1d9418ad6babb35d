package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// TestEndToEndMedia runs the daemon from YAML (visionModels, media.audio,
// mediaMaxMb): a photo reaches the model as an image_url part, a voice
// note as the fake transcription's text, an oversize file as a note; the
// downloads are private to the daemon's user.
func TestEndToEndMedia(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	model.SetTranscription(func(openaitest.Transcription) string { return "call me back" })
	stateDir := filepath.Join(t.TempDir(), "state")
	yaml := e2eConfig(stateDir, tg, model)
	yaml = strings.Replace(yaml, "maxRetries: 1}", "maxRetries: 1, visionModels: [test-*]}", 1)
	yaml = strings.Replace(yaml, "pollTimeoutSeconds: 1", "pollTimeoutSeconds: 1\n        mediaMaxMb: 1", 1)
	yaml += "media: {audio: {provider: fake, model: whisper-1}}\n"
	_, stop := startDaemon(t, yaml)
	defer stop()

	img := []byte("\x89PNG\r\n\x1a\n fake png body")
	photo := tg.AddFile(telegramtest.File{Data: img})
	tg.AddMessage(telegramtest.Message{ChatID: 501, Caption: "what is this",
		Extra: map[string]any{"photo": telegramtest.PhotoSizes([]string{photo}, []int{len(img)})}})
	waitReply(t, tg, "reply: what is this")
	req, _ := lastRequestFor(model, "what is this")
	parts := req.Body.Messages[len(req.Body.Messages)-1].MultiContent
	if len(parts) != 2 || parts[1].ImageURL == nil || !strings.HasPrefix(parts[1].ImageURL.URL, "data:image/png;base64,") {
		t.Fatalf("last user message parts %+v", parts)
	}

	voice := tg.AddFile(telegramtest.File{Data: []byte("OggS voice")})
	tg.AddMessage(telegramtest.Message{ChatID: 502, Extra: map[string]any{
		"voice": map[string]any{"file_id": voice, "file_unique_id": "uv", "duration": 1, "mime_type": "audio/ogg"}}})
	waitReply(t, tg, "reply: [voice message, transcribed] call me back")

	tg.AddMessage(telegramtest.Message{ChatID: 503, Extra: map[string]any{
		"document": map[string]any{"file_id": "big", "file_unique_id": "ub", "file_name": "big.csv", "mime_type": "text/csv", "file_size": 2 << 20}}})
	waitReply(t, tg, "reply: [media unavailable: too large (2.0 MB, limit 1.0 MB): big.csv]")

	var files int
	err := filepath.WalkDir(filepath.Join(stateDir, "media"), func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		want := os.FileMode(0o600)
		if e.IsDir() {
			want = 0o700
		} else {
			files++
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil || files != 2 {
		t.Fatalf("media files %d (want the photo and the voice note): %v", files, err)
	}
}
