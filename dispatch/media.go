package dispatch

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/sessions"
)

// mediaFetcher turns a message's attachments into model input when its
// turn runs, fetching them through their adapter and keeping the
// downloads under the state dir (media_store.go). It holds no state of
// its own.
type mediaFetcher struct{ d *Dispatcher }

// mediaTimeout bounds fetching and transcribing one attachment.
const mediaTimeout = 2 * time.Minute

// mediaTurn is what attachment handling needs to know about the turn.
type mediaTurn struct {
	agentID, sessionID string
	vision             bool // the session's model takes images
}

var errNoFetcher = errors.New("this channel cannot fetch files")

// withMedia resolves in's attachments at turn time (the journal carries
// their references, so a restart fetches them too): notes are appended to
// in.Text, and images for a vision model come back as image blocks in
// pi-coding-agent's format ({"type":"image","data":<base64>,"mimeType":...}).
func (mf mediaFetcher) withMedia(ctx context.Context, in channels.Inbound, mt mediaTurn) (channels.Inbound, []sessions.Content) {
	var notes []string
	var images []sessions.Content
	for _, att := range in.Attachments {
		note, img := mf.attachment(ctx, in, att, mt)
		if note != "" {
			notes = append(notes, note)
		}
		if img != nil {
			images = append(images, *img)
		}
	}
	if len(notes) > 0 {
		text := strings.Join(notes, "\n")
		if strings.TrimSpace(in.Text) != "" {
			text = in.Text + "\n" + text
		}
		in.Text = text
	}
	in.Attachments = nil
	return in, images
}

// attachment turns one attachment into a note for the text, an image
// block, or both empty.
func (mf mediaFetcher) attachment(ctx context.Context, in channels.Inbound, att channels.Attachment, mt mediaTurn) (string, *sessions.Content) {
	d := mf.d
	ctx, cancel := context.WithTimeout(ctx, mediaTimeout)
	defer cancel()
	media := d.rt.Load().Media
	log := d.log.With(zap.String("channel", in.Channel), zap.String("chat_id", in.ChatID),
		zap.String("media_kind", string(att.Kind)))
	kind := att.Kind
	if kind == channels.MediaDocument && imageMIME(att.MimeType) {
		kind = channels.MediaImage
	}
	switch kind {
	case channels.MediaImage:
		if !mt.vision {
			return "[image: " + att.Label() + ", not shown: this model does not take images]", nil
		}
		data, err := mf.fetch(ctx, in, att, mt, media)
		if err != nil {
			return unavailable(err, att, log), nil
		}
		mime := http.DetectContentType(data) // the bytes, not the label, decide
		if !imageMIME(mime) {
			mime = att.MimeType
		}
		if !imageMIME(mime) {
			return "[media unavailable: not an image the model can read (" + mime + "): " + att.Label() + "]", nil
		}
		return "", &sessions.Content{Type: sessions.BlockImage, Data: base64.StdEncoding.EncodeToString(data), MimeType: mime}
	case channels.MediaVoice, channels.MediaAudio:
		return mf.transcribe(ctx, in, att, mt, media, log), nil
	case channels.MediaDocument:
		if !textDocument(att) {
			return describe("file", att), nil
		}
		data, err := mf.fetch(ctx, in, att, mt, media)
		if err != nil {
			return unavailable(err, att, log), nil
		}
		if !utf8.Valid(data) {
			return describe("file", att), nil
		}
		return inlineText(att, data, media.maxText()), nil
	}
	return describe(string(kind), att), nil
}

func (mf mediaFetcher) transcribe(ctx context.Context, in channels.Inbound, att channels.Attachment, mt mediaTurn, media Media, log *zap.Logger) string {
	label := "voice message"
	if att.Kind == channels.MediaAudio {
		label = "audio " + att.Label()
	}
	if media.Transcribe == nil {
		return "[media unavailable: voice transcription is not configured (media.audio): " + label + "]"
	}
	data, err := mf.fetch(ctx, in, att, mt, media)
	if err != nil {
		return unavailable(err, att, log)
	}
	text, err := media.Transcribe(ctx, bytes.NewReader(data), "audio"+mediaExt(att.MimeType))
	if err != nil {
		log.Warn("transcription failed", zap.Error(err))
		return "[media unavailable: transcription failed: " + label + "]"
	}
	return "[" + label + ", transcribed] " + text
}

// fetch returns an attachment's content: inline data as it is, else a
// download through the adapter, stored under the session's media dir.
func (mf mediaFetcher) fetch(ctx context.Context, in channels.Inbound, att channels.Attachment, mt mediaTurn, media Media) ([]byte, error) {
	d := mf.d
	max := media.maxBytes(in.Account())
	if att.Data != nil {
		if int64(len(att.Data)) > max {
			return nil, &channels.MediaTooLargeError{Size: int64(len(att.Data)), Max: max}
		}
		return att.Data, nil
	}
	if att.Size > max {
		return nil, &channels.MediaTooLargeError{Size: att.Size, Max: max}
	}
	f, ok := d.adapter(in.Channel, in.AccountID).(channels.MediaFetcher)
	if !ok {
		return nil, errNoFetcher
	}
	m, err := f.FetchMedia(ctx, att, max)
	if err != nil {
		return nil, err
	}
	defer m.Body.Close()
	data, _, err := saveMedia(mf.mediaRoot(), mt.agentID, mt.sessionID, mediaExt(att.MimeType), channels.LimitedReader(m.Body, max))
	if err != nil {
		return nil, err
	}
	d.log.Debug("media fetched", zap.String("channel", in.Channel), zap.String("media_kind", string(att.Kind)),
		zap.Int("bytes", len(data)))
	return data, nil
}

// unavailable is the note for an attachment that could not be used; the
// reason is user-safe (never a provider or transport error).
func unavailable(err error, att channels.Attachment, log *zap.Logger) string {
	var tl *channels.MediaTooLargeError
	reason := "download failed"
	switch {
	case errors.As(err, &tl) && tl.Size > tl.Max+1:
		reason = fmt.Sprintf("too large (%s, limit %s)", sizeText(tl.Size), sizeText(tl.Max))
	case errors.As(err, &tl): // cut during the download: the size is unknown
		reason = fmt.Sprintf("too large (over the %s limit)", sizeText(tl.Max))
	case errors.Is(err, errNoFetcher):
		reason = errNoFetcher.Error()
	default:
		log.Warn("media download failed", zap.Error(err))
	}
	return "[media unavailable: " + reason + ": " + att.Label() + "]"
}

// describe is the note for a file the model cannot read.
func describe(what string, att channels.Attachment) string {
	parts := []string{att.Label()}
	if att.MimeType != "" {
		parts = append(parts, att.MimeType)
	}
	if att.Size > 0 {
		parts = append(parts, sizeText(att.Size))
	}
	return "[" + what + ": " + strings.Join(parts, ", ") + "]"
}

// inlineText puts a text document into the message, cut at max bytes (on a
// character boundary) with a note.
func inlineText(att channels.Attachment, data []byte, max int) string {
	mime := att.MimeType
	if mime == "" {
		mime = "text"
	}
	head := fmt.Sprintf("[file: %s (%s, %s)]\n", att.Label(), mime, sizeText(int64(len(data))))
	if len(data) <= max {
		return head + string(data)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(data[cut]) {
		cut--
	}
	return head + string(data[:cut]) + fmt.Sprintf("\n[cut: only the first %s of %s are shown]", sizeText(int64(cut)), sizeText(int64(len(data))))
}

func sizeText(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// imageMIME reports the image types vision models take.
func imageMIME(t string) bool {
	switch strings.ToLower(strings.TrimSpace(strings.Split(t, ";")[0])) {
	case "image/jpeg", "image/png", "image/gif", "image/webp":
		return true
	}
	return false
}

var textMIMEs = map[string]bool{
	"application/json": true, "application/xml": true, "application/x-yaml": true, "application/yaml": true,
	"application/csv": true, "application/javascript": true, "application/x-sh": true, "application/toml": true,
	"application/x-ndjson": true, "application/sql": true,
}

var textExts = map[string]bool{
	".txt": true, ".md": true, ".markdown": true, ".csv": true, ".tsv": true, ".json": true, ".jsonl": true,
	".yaml": true, ".yml": true, ".xml": true, ".log": true, ".toml": true, ".ini": true, ".go": true,
	".py": true, ".js": true, ".ts": true, ".html": true, ".css": true, ".sh": true, ".sql": true, ".rs": true,
}

// textDocument reports a document to inline: a text MIME type, or a
// generic one with a text file extension (the name only classifies; it
// never becomes a path).
func textDocument(att channels.Attachment) bool {
	mime := strings.ToLower(strings.TrimSpace(strings.Split(att.MimeType, ";")[0]))
	if strings.HasPrefix(mime, "text/") || textMIMEs[mime] {
		return true
	}
	if mime != "" && mime != "application/octet-stream" {
		return false
	}
	return textExts[strings.ToLower(path.Ext(att.FileName))]
}

// mediaExt is the extension a stored download gets, from its MIME type.
func mediaExt(mime string) string {
	switch strings.ToLower(strings.TrimSpace(strings.Split(mime, ";")[0])) {
	case "image/jpeg":
		return ".jpg"
	case "image/png":
		return ".png"
	case "image/gif":
		return ".gif"
	case "image/webp":
		return ".webp"
	case "audio/ogg", "audio/opus":
		return ".ogg"
	case "audio/mpeg", "audio/mp3":
		return ".mp3"
	case "audio/mp4", "audio/m4a", "audio/x-m4a":
		return ".m4a"
	case "audio/wav", "audio/x-wav":
		return ".wav"
	case "audio/webm":
		return ".webm"
	}
	return ".bin"
}
