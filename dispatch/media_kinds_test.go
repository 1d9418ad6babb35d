package dispatch

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/sessions"
)

// TestTelegramVoiceIsTranscribed: a voice note is downloaded, sent to the
// transcription endpoint, and its text reaches the model.
func TestTelegramVoiceIsTranscribed(t *testing.T) {
	r := newMediaRig(t, "oa/gpt-4o")
	r.oa.SetTranscription(func(tr openaitest.Transcription) string { return "please book a table for two" })
	ogg := []byte("OggS fake opus audio")
	id := r.tg.AddFile(telegramtest.File{Path: "voice/file_9.oga", Data: ogg})
	r.tg.AddMessage(telegramtest.Message{ChatID: 111, Extra: map[string]any{
		"voice": map[string]any{"file_id": id, "file_unique_id": "uv", "duration": 2, "mime_type": "audio/ogg", "file_size": len(ogg)}}})
	got := r.lastUserOpenAI(1)
	if want := "text:[voice message, transcribed] please book a table for two"; len(got) != 1 || got[0] != want {
		t.Fatalf("user message %q, want %q", got, want)
	}
	trs := r.oa.Transcriptions()
	if len(trs) != 1 || trs[0].Model != "whisper-1" || !bytes.Equal(trs[0].Data, ogg) || trs[0].FileName != "audio.ogg" {
		t.Fatalf("transcriptions %+v", trs)
	}
}

// TestTelegramAudioIsTranscribed: an audio file (an mp3, not a voice
// note) goes through media.audio like a voice note, named by its file.
func TestTelegramAudioIsTranscribed(t *testing.T) {
	r := newMediaRig(t, "oa/gpt-4o")
	r.oa.SetTranscription(func(tr openaitest.Transcription) string { return "minutes of the meeting" })
	mp3 := []byte("ID3 fake mpeg audio")
	id := r.tg.AddFile(telegramtest.File{Path: "music/file_3.mp3", Data: mp3})
	r.tg.AddMessage(telegramtest.Message{ChatID: 111, Caption: "what was decided?", Extra: map[string]any{
		"audio": map[string]any{"file_id": id, "file_unique_id": "ua", "duration": 60, "file_name": "meeting.mp3",
			"mime_type": "audio/mpeg", "file_size": len(mp3)}}})
	got := r.lastUserOpenAI(1)
	if want := "text:what was decided?\n[audio meeting.mp3, transcribed] minutes of the meeting"; len(got) != 1 || got[0] != want {
		t.Fatalf("user message %q, want %q", got, want)
	}
	trs := r.oa.Transcriptions()
	if len(trs) != 1 || trs[0].Model != "whisper-1" || !bytes.Equal(trs[0].Data, mp3) || trs[0].FileName != "audio.mp3" {
		t.Fatalf("transcriptions %+v", trs)
	}
}

// TestTelegramAudioDocumentIsTranscribed: a recording sent as a file (a
// document with an audio MIME type, e.g. a .wav or .m4a) is transcribed
// like audio, not described as a file.
func TestTelegramAudioDocumentIsTranscribed(t *testing.T) {
	r := newMediaRig(t, "oa/gpt-4o")
	r.oa.SetTranscription(func(tr openaitest.Transcription) string { return "call notes" })
	wav := []byte("RIFF fake wave audio")
	id := r.tg.AddFile(telegramtest.File{Path: "documents/file_5.wav", Data: wav})
	r.tg.AddMessage(telegramtest.Message{ChatID: 111, Caption: "summarise the call", Extra: map[string]any{
		"document": map[string]any{"file_id": id, "file_unique_id": "uw", "file_name": "call.wav",
			"mime_type": "audio/x-wav", "file_size": len(wav)}}})
	got := r.lastUserOpenAI(1)
	if want := "text:summarise the call\n[audio call.wav, transcribed] call notes"; len(got) != 1 || got[0] != want {
		t.Fatalf("user message %q, want %q", got, want)
	}
	if trs := r.oa.Transcriptions(); len(trs) != 1 || !bytes.Equal(trs[0].Data, wav) {
		t.Fatalf("transcriptions %+v", trs)
	}
}

// TestTelegramImageDocumentReachesOpenAIAsImage: a PNG sent as a file (a
// document with an image MIME type, not a photo) is an image_url part
// like a photo, not a described file.
func TestTelegramImageDocumentReachesOpenAIAsImage(t *testing.T) {
	r := newMediaRig(t, "oa/gpt-4o")
	id := r.tg.AddFile(telegramtest.File{Path: "documents/file_4.png", Data: pngBytes, ContentType: "image/png"})
	r.tg.AddMessage(telegramtest.Message{ChatID: 111, Caption: "full resolution", Extra: map[string]any{
		"document": map[string]any{"file_id": id, "file_unique_id": "ui", "file_name": "screenshot.png",
			"mime_type": "image/png", "file_size": len(pngBytes)}}})
	got := r.lastUserOpenAI(1)
	want := []string{"text:full resolution", "image:data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes)}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("user message parts %q, want %q", got, want)
	}
	hist := historyOf(t, r.mgr, r.session())
	if len(hist) < 1 || len(hist[0].Content) != 2 || hist[0].Content[1].Type != sessions.BlockImage || hist[0].Content[1].MimeType != "image/png" {
		t.Fatalf("transcript user message %+v", hist)
	}
}

// TestTelegramTextDocumentInlined: a text document is inlined, cut at the
// cap with a note; a PDF is only described.
func TestTelegramTextDocumentInlined(t *testing.T) {
	r := newMediaRig(t, "oa/gpt-4o")
	notes := "# Notes\nbuy milk\n"
	id := r.tg.AddFile(telegramtest.File{Data: []byte(notes)})
	r.tg.AddMessage(telegramtest.Message{ChatID: 111, Caption: "summarise", Extra: map[string]any{
		"document": map[string]any{"file_id": id, "file_unique_id": "ud", "file_name": "notes.md", "mime_type": "text/markdown", "file_size": len(notes)}}})
	got := r.lastUserOpenAI(1)
	want := "text:summarise\n[file: notes.md (text/markdown, 17 bytes)]\n" + notes
	if len(got) != 1 || got[0] != want {
		t.Fatalf("user message %q, want %q", got, want)
	}

	big := strings.Repeat("é", 40<<10) // 80 KB of text
	id = r.tg.AddFile(telegramtest.File{Data: []byte(big)})
	r.tg.AddMessage(telegramtest.Message{ChatID: 111, Extra: map[string]any{
		"document": map[string]any{"file_id": id, "file_unique_id": "ub", "file_name": "big.txt", "mime_type": "text/plain"}}})
	got = r.lastUserOpenAI(2)
	if len(got) != 1 || !strings.HasSuffix(got[0], "[cut: only the first 32.0 KB of 80.0 KB are shown]") ||
		len(got[0]) > 33<<10 || !strings.Contains(got[0], "éé") {
		t.Fatalf("cut document: %d bytes, ends %q", len(got[0]), got[0][max(0, len(got[0])-80):])
	}

	r.tg.AddMessage(telegramtest.Message{ChatID: 111, Extra: map[string]any{
		"document": map[string]any{"file_id": "pdf-1", "file_unique_id": "up", "file_name": "report.pdf", "mime_type": "application/pdf", "file_size": 2048}}})
	got = r.lastUserOpenAI(3)
	if want := "text:[file: report.pdf, application/pdf, 2.0 KB]"; len(got) != 1 || got[0] != want {
		t.Fatalf("user message %q, want %q", got, want)
	}
	for _, c := range r.tg.GetFileCalls() {
		if c == "pdf-1" {
			t.Error("the PDF was fetched; it is only described")
		}
	}
}

// TestOversizeMediaUnavailable: a file announced above mediaMaxMb is never
// fetched; the model gets "[media unavailable: too large ...]".
func TestOversizeMediaUnavailable(t *testing.T) {
	r := newMediaRig(t, "oa/gpt-4o")
	id := r.tg.AddFile(telegramtest.File{Data: bytes.Repeat([]byte("x"), 3<<20)})
	r.tg.AddMessage(telegramtest.Message{ChatID: 111, Caption: "look", Extra: map[string]any{
		"document": map[string]any{"file_id": id, "file_unique_id": "ux", "file_name": "huge.png", "mime_type": "image/png", "file_size": 3 << 20}}})
	got := r.lastUserOpenAI(1)
	if want := "text:look\n[media unavailable: too large (3.0 MB, limit 1.0 MB): huge.png]"; len(got) != 1 || got[0] != want {
		t.Fatalf("user message %q, want %q", got, want)
	}
	if n := len(r.tg.GetFileCalls()) + len(r.tg.Downloads()); n != 0 {
		t.Fatalf("%d getFile calls or downloads, want none", n)
	}
}

// TestImageForModelWithoutVision: a model not in visionModels gets a note
// instead of the image, and the image is not downloaded.
func TestImageForModelWithoutVision(t *testing.T) {
	r := newMediaRig(t, "oa/text-only")
	id := r.tg.AddFile(telegramtest.File{Data: pngBytes})
	r.tg.AddMessage(photoMessage(id, len(pngBytes), "see?"))
	got := r.lastUserOpenAI(1)
	if want := "text:see?\n[image: photo.jpg, not shown: this model does not take images]"; len(got) != 1 || got[0] != want {
		t.Fatalf("user message %q, want %q", got, want)
	}
	if n := len(r.tg.Downloads()); n != 0 {
		t.Errorf("%d downloads, want none", n)
	}
}

// TestMediaFetchedAfterRestart: a message accepted with an attachment but
// not yet run when the process stopped is fetched at the next start from
// the reference its journal record carries.
func TestMediaFetchedAfterRestart(t *testing.T) {
	r := newMediaRig(t, "oa/gpt-4o")
	r.close()
	r.start(false) // no polling: the message was accepted before the stop
	id := r.tg.AddFile(telegramtest.File{Data: pngBytes})
	msg := in("telegram", "111", "from before")
	msg.Attachments = []channels.Attachment{{Kind: channels.MediaImage, MimeType: "image/jpeg", FileName: "photo.jpg", Ref: id}}
	journalOnly(t, r.d, msg)
	r.close()
	r.start(false)
	if _, err := r.d.Resume(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := r.lastUserOpenAI(1)
	if len(got) != 2 || got[0] != "text:from before" || !strings.HasPrefix(got[1], "image:data:image/png;base64,") {
		t.Fatalf("user message %q", got)
	}
	if calls := r.tg.GetFileCalls(); len(calls) != 1 || calls[0] != id {
		t.Errorf("getFile calls %v", calls)
	}
}

// journalOnly journals msg as Handle does without queueing it (the state a
// stop leaves between the journal write and the turn).
func journalOnly(t *testing.T, d *Dispatcher, msg channels.Inbound) {
	t.Helper()
	route, err := d.Route(msg)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(envelope{Inbound: &msg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.journal.Accept(t.Context(), sessions.Record{ID: RecordID(msg), AgentID: route.AgentID,
		SessionKey: route.Key.String(), Payload: payload, AcceptedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

// TestMediaUnavailableReasons: without media.audio a voice note is not
// fetched and the model is told why; a file the platform cannot serve
// becomes "[media unavailable: download failed ...]".
func TestMediaUnavailableReasons(t *testing.T) {
	r := newMediaRig(t, "oa/gpt-4o")
	rt := *r.d.Runtime()
	rt.Media.Transcribe = nil
	r.d.SetRuntime(&rt)
	r.tg.AddMessage(telegramtest.Message{ChatID: 111, Extra: map[string]any{
		"voice": map[string]any{"file_id": "v-1", "file_unique_id": "uv", "duration": 2, "mime_type": "audio/ogg", "file_size": 10}}})
	got := r.lastUserOpenAI(1)
	if want := "text:[media unavailable: voice transcription is not configured (media.audio): voice message]"; len(got) != 1 || got[0] != want {
		t.Fatalf("user message %q, want %q", got, want)
	}
	if n := len(r.tg.GetFileCalls()); n != 0 {
		t.Errorf("%d getFile calls, want none", n)
	}
	r.tg.AddMessage(photoMessage("gone", 10, "")) // getFile answers 400
	got = r.lastUserOpenAI(2)
	if want := "text:[media unavailable: download failed: photo.jpg]"; len(got) != 1 || got[0] != want {
		t.Fatalf("user message %q, want %q", got, want)
	}
}

// TestOversizeDownloadCut: a file whose announced size lies is cut as the
// download passes mediaMaxMb; nothing of it is kept.
func TestOversizeDownloadCut(t *testing.T) {
	r := newMediaRig(t, "oa/gpt-4o")
	id := r.tg.AddFile(telegramtest.File{Data: bytes.Repeat([]byte("a,b\n"), 8<<20), Size: 40, Chunked: true})
	r.tg.AddMessage(telegramtest.Message{ChatID: 111, Extra: map[string]any{
		"document": map[string]any{"file_id": id, "file_unique_id": "ul", "file_name": "rows.csv", "mime_type": "text/csv", "file_size": 40}}})
	got := r.lastUserOpenAI(1)
	if want := "text:[media unavailable: too large (over the 1.0 MB limit): rows.csv]"; len(got) != 1 || got[0] != want {
		t.Fatalf("user message %q, want %q", got, want)
	}
	d, err := r.tg.WaitDownloads(t.Context(), 1)
	if err != nil || len(d) != 1 || d[0].Bytes >= 32<<20 {
		t.Fatalf("downloads %+v (%v), want one cut short", d, err)
	}
	left, _ := filepath.Glob(filepath.Join(r.dir, "media", "main", "*", "*"))
	hidden, _ := filepath.Glob(filepath.Join(r.dir, "media", "main", "*", ".*"))
	if len(left)+len(hidden) != 0 {
		t.Fatalf("files left behind: %v %v", left, hidden)
	}
}
