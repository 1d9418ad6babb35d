package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
)

// Files out (issue 23). A reply's media groups become sendPhoto,
// sendVideo, sendVoice, sendAudio or sendDocument for a single file and
// sendMediaGroup for an album (2–10 photos and videos, or documents, or
// audio files: Telegram groups no other mix; a voice note goes alone). The
// caption (Markdown, sent as HTML) rides on the first call of a group and
// is cut at MaxCaptionLength; the rest follows as text. Each call is one
// chunk of the outbox: a restart resends only calls not yet marked, so an
// album is posted twice only if the process dies between Telegram's
// answer and the mark (the window of SPEC §3.7; the Bot API has no
// idempotency key).

var _ channels.MediaSender = (*Adapter)(nil)

// Telegram's limits for bots.
const (
	// MaxCaptionLength is a media caption's limit (UTF-16 units after
	// entity parsing).
	MaxCaptionLength = 1024
	// MaxAlbum is the most files of one sendMediaGroup.
	MaxAlbum = 10
	// MaxUpload is the largest file a bot uploads; MaxPhotoUpload the
	// largest sent as a photo (larger pictures go as documents).
	MaxUpload      = 50 << 20
	MaxPhotoUpload = 10 << 20
)

// uploadTimeout bounds one upload call (a 50 MB file on a slow link).
const uploadTimeout = 5 * time.Minute

// chunksWithMedia is Chunks for a reply with files: the text split into
// messages, then the media calls (mediaPlan).
func (a *Adapter) chunksWithMedia(out channels.Outbound) []string {
	return channels.MediaChunks(out, mediaPlan, func(s string) []string {
		return channels.SplitMarkdown(s, MaxMessageLength)
	})
}

// sendKind is how Telegram takes a file: photo, video, voice, audio or
// document (what a file too large for its kind becomes).
func sendKind(m channels.OutMedia) string {
	switch m.Kind {
	case channels.MediaImage:
		if m.Size <= MaxPhotoUpload {
			return "photo"
		}
	case channels.MediaVideo:
		return "video"
	case channels.MediaVoice:
		return "voice"
	case channels.MediaAudio:
		return "audio"
	}
	return "document"
}

// albumFamily is which files may share an album.
func albumFamily(kind string) string {
	switch kind {
	case "photo", "video":
		return "visual"
	case "voice":
		return "" // never grouped
	}
	return kind
}

// mediaPlan splits group g into calls: runs of files of one album family
// become albums of at most MaxAlbum, other files single sends; a file over
// MaxUpload becomes its text fallback. The caption goes on the first call
// that sends files; with none, it follows the notices as text.
func mediaPlan(g int, mg channels.MediaGroup) ([]channels.MediaChunk, string) {
	caption, rest := captionSplit(mg.Caption)
	var out []channels.MediaChunk
	var run []int
	family := ""
	flush := func() {
		if len(run) > 0 {
			out = append(out, channels.MediaChunk{Group: g, Items: run})
			run = nil
		}
	}
	for i, m := range mg.Items {
		if m.Size > MaxUpload {
			flush()
			out = append(out, channels.MediaChunk{Group: g, Items: []int{i},
				Fallback: channels.FallbackText(m, fmt.Sprintf("over Telegram's %d MB limit for bots", MaxUpload>>20))})
			continue
		}
		f := albumFamily(sendKind(m))
		if f == "" || f != family || len(run) == MaxAlbum {
			flush()
		}
		family = f
		run = append(run, i)
		if f == "" {
			flush()
		}
	}
	flush()
	for i := range out {
		if out[i].Fallback == "" { // a notice is sent as it is: the caption goes with files
			out[i].Caption = caption
			return out, rest
		}
	}
	return out, strings.TrimSpace(caption + "\n\n" + rest)
}

// captionSplit cuts a caption to MaxCaptionLength UTF-16 units of its
// Markdown (the HTML's visible text is never longer).
func captionSplit(caption string) (head, rest string) {
	max := MaxCaptionLength
	for {
		head, rest = channels.SplitCaption(caption, max)
		if utf16Len(head) <= MaxCaptionLength || max < 16 {
			return head, rest
		}
		max -= (utf16Len(head) - MaxCaptionLength) + 1
	}
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// SendMedia implements channels.MediaSender.
func (a *Adapter) SendMedia(ctx context.Context, out channels.Outbound, i int, c channels.MediaChunk, open channels.MediaOpener) ([]string, error) {
	if c.Fallback != "" {
		id, err := a.SendChunkID(ctx, out, i, c.Fallback)
		return nonEmpty(id), err
	}
	files, err := c.Files(out)
	if err != nil {
		return nil, channels.Refusal(fmt.Errorf("telegram: send media: %w", err))
	}
	params, err := a.target(out)
	if err != nil {
		return nil, err
	}
	quote(params, out, i)
	method, html := mediaMethod(files), true
	resp, err := a.retrying(ctx, method, params, func() (*tgbotapi.APIResponse, error) {
		return a.upload(ctx, method, params, files, c.Caption, html, open)
	}, func(ae *APIError) bool {
		if !ae.EntitiesRejected() || !html {
			return false
		}
		a.log.Warn("telegram rejected a formatted caption, resending it as plain text", zap.String("method", method),
			zap.String("chat_id", params["chat_id"]), zap.String("reason", ae.Description))
		html = false
		return true
	})
	if err != nil {
		return nil, err
	}
	ids := sentIDs(resp)
	for _, id := range ids {
		a.noteSent(params, id, out.Address)
	}
	return ids, nil
}

// mediaMethod is the call that sends files: one file's own method
// (sendPhoto, …), several sendMediaGroup.
func mediaMethod(files []channels.OutMedia) string {
	if len(files) != 1 {
		return "sendMediaGroup"
	}
	kind := sendKind(files[0])
	return "send" + strings.ToUpper(kind[:1]) + kind[1:]
}

// upload makes one call of method (mediaMethod) sending files with
// caption, streaming each file from the store.
func (a *Adapter) upload(ctx context.Context, method string, base tgbotapi.Params, files []channels.OutMedia, caption string, html bool,
	open channels.MediaOpener) (*tgbotapi.APIResponse, error) {
	params := tgbotapi.Params{}
	for k, v := range base {
		params[k] = v
	}
	text, mode := caption, ""
	if html && caption != "" {
		text, mode = FormatHTML(caption), "HTML"
	}
	var reqs []tgbotapi.RequestFile
	readers := make([]io.ReadCloser, 0, len(files))
	defer func() {
		for _, r := range readers {
			r.Close()
		}
	}()
	for k, f := range files {
		rc, err := open(f)
		if err != nil {
			return nil, fmt.Errorf("telegram: send media: %w", err)
		}
		readers = append(readers, rc)
		name := f.FileName
		if name == "" {
			name = "file"
		}
		field := sendKind(f)
		if len(files) > 1 {
			field = "file" + strconv.Itoa(k)
		}
		reqs = append(reqs, tgbotapi.RequestFile{Name: field, Data: tgbotapi.FileReader{Name: name, Reader: rc}})
	}
	if len(files) == 1 {
		if text != "" {
			params["caption"] = text
			if mode != "" {
				params["parse_mode"] = mode
			}
		}
	} else {
		type inputMedia struct {
			Type      string `json:"type"`
			Media     string `json:"media"`
			Caption   string `json:"caption,omitempty"`
			ParseMode string `json:"parse_mode,omitempty"`
		}
		media := make([]inputMedia, len(files))
		for k, f := range files {
			media[k] = inputMedia{Type: sendKind(f), Media: "attach://file" + strconv.Itoa(k)}
		}
		media[0].Caption, media[0].ParseMode = text, mode
		if text == "" {
			media[0].ParseMode = ""
		}
		b, err := json.Marshal(media)
		if err != nil {
			return nil, fmt.Errorf("telegram: %s: %w", method, err)
		}
		params["media"] = string(b)
	}
	ctx, cancel := context.WithTimeout(ctx, uploadTimeout)
	defer cancel()
	b := a.bot
	b.Client = ctxClient{ctx: ctx, c: a.client}
	resp, err := b.UploadFiles(method, params, reqs)
	var te *tgbotapi.Error
	if errors.As(err, &te) && te.Code == 0 && resp != nil {
		// UploadFiles, unlike MakeRequest, leaves the error code out of
		// its error (library v5.5.1): without it no 400 is recognised
		// (APIError.EntitiesRejected).
		te.Code = resp.ErrorCode
	}
	return resp, wrapErr(method, err)
}

// sentIDs are the message ids of a send answer: one message or, for an
// album, an array of them.
func sentIDs(resp *tgbotapi.APIResponse) []string {
	if resp == nil {
		return nil
	}
	var many []struct {
		MessageID int `json:"message_id"`
	}
	if json.Unmarshal(resp.Result, &many) == nil {
		ids := make([]string, 0, len(many))
		for _, m := range many {
			ids = append(ids, strconv.Itoa(m.MessageID))
		}
		return ids
	}
	return nonEmpty(sentID(resp))
}

func nonEmpty(id string) []string {
	if id == "" {
		return nil
	}
	return []string{id}
}
