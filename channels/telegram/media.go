package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/gateway/gateway/channels"
)

var _ channels.MediaFetcher = (*Adapter)(nil)

// attachments lists m's files as attachments (a file_id each, journaled
// with the message). Kinds the gateway cannot use (stickers, locations,
// polls) stay text placeholders (see placeholder).
func (a *Adapter) attachments(m *tgbotapi.Message) []channels.Attachment {
	switch {
	case len(m.Photo) > 0:
		p := largestPhoto(m.Photo, channels.MediaMaxBytes(a.cfg.MediaMaxMb))
		return []channels.Attachment{{Kind: channels.MediaImage, MimeType: "image/jpeg", Size: int64(p.FileSize),
			FileName: "photo.jpg", Ref: p.FileID}}
	case m.Voice != nil:
		return []channels.Attachment{{Kind: channels.MediaVoice, MimeType: orDefault(m.Voice.MimeType, "audio/ogg"),
			Size: int64(m.Voice.FileSize), FileName: "voice.ogg", Ref: m.Voice.FileID}}
	case m.Audio != nil:
		return []channels.Attachment{{Kind: channels.MediaAudio, MimeType: orDefault(m.Audio.MimeType, "audio/mpeg"),
			Size: int64(m.Audio.FileSize), FileName: orDefault(m.Audio.FileName, "audio"), Ref: m.Audio.FileID}}
	case m.VideoNote != nil:
		return []channels.Attachment{{Kind: channels.MediaVideo, MimeType: "video/mp4", Size: int64(m.VideoNote.FileSize),
			FileName: "video message", Ref: m.VideoNote.FileID}}
	case m.Animation != nil: // also sets Document; check first
		return []channels.Attachment{{Kind: channels.MediaVideo, MimeType: orDefault(m.Animation.MimeType, "video/mp4"),
			Size: int64(m.Animation.FileSize), FileName: orDefault(m.Animation.FileName, "animation"), Ref: m.Animation.FileID}}
	case m.Video != nil:
		return []channels.Attachment{{Kind: channels.MediaVideo, MimeType: orDefault(m.Video.MimeType, "video/mp4"),
			Size: int64(m.Video.FileSize), FileName: orDefault(m.Video.FileName, "video"), Ref: m.Video.FileID}}
	case m.Document != nil:
		d := m.Document
		kind := channels.MediaDocument
		switch {
		case isImageMIME(d.MimeType):
			kind = channels.MediaImage
		case strings.HasPrefix(strings.ToLower(d.MimeType), "audio/"):
			kind = channels.MediaAudio // a recording sent as a file: transcribed like audio
		}
		return []channels.Attachment{{Kind: kind, MimeType: d.MimeType, Size: int64(d.FileSize),
			FileName: orDefault(d.FileName, "document"), Ref: d.FileID}}
	}
	return nil
}

// largestPhoto picks the largest size of a photo whose announced size fits
// under max (sizes come smallest first); the smallest if none fits.
func largestPhoto(sizes []tgbotapi.PhotoSize, max int64) tgbotapi.PhotoSize {
	best := sizes[0]
	for _, p := range sizes[1:] {
		if int64(p.FileSize) <= max && p.Width*p.Height >= best.Width*best.Height {
			best = p
		}
	}
	return best
}

// isImageMIME reports the image types vision models take.
func isImageMIME(t string) bool {
	switch strings.ToLower(t) {
	case "image/jpeg", "image/png", "image/gif", "image/webp":
		return true
	}
	return false
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// FetchMedia implements channels.MediaFetcher: getFile, then a download
// from <apiRoot>/file/bot<token>/<file_path>. The file_path Telegram
// returns is checked to be a plain relative path and escaped; no other
// host is ever contacted.
func (a *Adapter) FetchMedia(ctx context.Context, att channels.Attachment, maxBytes int64) (channels.Media, error) {
	if att.Ref == "" {
		return channels.Media{}, errors.New("telegram: fetch media: no file_id")
	}
	if att.Size > maxBytes {
		return channels.Media{}, &channels.MediaTooLargeError{Size: att.Size, Max: maxBytes}
	}
	resp, err := a.call(ctx, "getFile", tgbotapi.Params{"file_id": att.Ref})
	if err != nil {
		var ae *APIError
		if errors.As(err, &ae) && strings.Contains(strings.ToLower(ae.Description), "file is too big") {
			return channels.Media{}, &channels.MediaTooLargeError{Size: max(att.Size, maxBytes+1), Max: maxBytes}
		}
		return channels.Media{}, err
	}
	var f tgbotapi.File
	if err := json.Unmarshal(resp.Result, &f); err != nil {
		return channels.Media{}, fmt.Errorf("telegram: getFile: decode: %w", err)
	}
	if int64(f.FileSize) > maxBytes {
		return channels.Media{}, &channels.MediaTooLargeError{Size: int64(f.FileSize), Max: maxBytes}
	}
	rel, err := filePath(f.FilePath)
	if err != nil {
		return channels.Media{}, fmt.Errorf("telegram: getFile: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.cfg.APIRoot+"/file/bot"+a.bot.Token+"/"+rel, nil)
	if err != nil {
		return channels.Media{}, fmt.Errorf("telegram: download: %w", err)
	}
	res, err := a.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = "file" // the URL holds the token
		}
		return channels.Media{}, fmt.Errorf("telegram: download: %w", err)
	}
	m, err := channels.MediaFromResponse(res, maxBytes)
	if err != nil {
		return channels.Media{}, fmt.Errorf("telegram: download: %w", err)
	}
	return m, nil
}

// filePath checks a getFile file_path (segments of safe characters, no
// "..") and escapes it for a URL.
func filePath(p string) (string, error) {
	if p == "" || len(p) > 512 || strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("bad file_path %q", p)
	}
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if s == "" || s == "." || s == ".." || strings.ContainsAny(s, "\\?#%\x00") {
			return "", fmt.Errorf("bad file_path %q", p)
		}
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/"), nil
}
