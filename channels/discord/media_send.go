package discord

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"

	"github.com/bwmarrin/discordgo"
	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
)

// Files out (issue 23). A reply's media group becomes messages of at most
// MaxAttachments files each, the caption as the first one's content (cut
// at MaxMessageLen, the rest following as text). A file larger than the
// channel's upload limit (UploadLimitsMb by the guild's boost tier; DMs
// tier 0) is not attempted: a text notice saying so takes its place, and
// Discord's own 413 answer becomes the same notice (the outbox's
// fallback). Each message is one outbox chunk posted with the chunk's
// nonce (nonce.go), so a resend after a crash or a lost answer creates
// nothing new: exactly once.

var _ channels.MediaSender = (*Adapter)(nil)

// MaxAttachments is the most files of one Discord message.
const MaxAttachments = 10

// DefaultUploadLimitsMb are the upload limits by boost tier 0–3.
var DefaultUploadLimitsMb = []int{10, 25, 50, 100}

// uploadLimit is the largest file the bot may attach in out's channel,
// and a phrase naming why ("this server's 25 MB upload limit (boost tier
// 1)").
func (a *Adapter) uploadLimit(out channels.Outbound) (int64, string) {
	limits := a.cfg.UploadLimitsMb
	if len(limits) != 4 {
		limits = DefaultUploadLimitsMb
	}
	tier, where := 0, "Discord's"
	if to, err := target(out); err == nil {
		if ch, err := a.s.State.Channel(to); err == nil && ch.GuildID != "" {
			where = "this server's"
			if g, err := a.s.State.Guild(ch.GuildID); err == nil {
				tier = int(g.PremiumTier)
			}
		}
	}
	tier = min(max(tier, 0), 3)
	mb := limits[tier]
	why := fmt.Sprintf("over %s %d MB upload limit", where, mb)
	if where == "this server's" {
		why += fmt.Sprintf(" (boost tier %d)", tier)
	}
	return int64(mb) << 20, why
}

// chunksWithMedia is Chunks for a reply with files: the text split, then
// each group's messages (mediaPlan) and its caption's rest.
func (a *Adapter) chunksWithMedia(out channels.Outbound) []string {
	limit, why := a.uploadLimit(out)
	plan := func(g int, mg channels.MediaGroup) ([]channels.MediaChunk, string) {
		caption, rest := channels.SplitCaption(mg.Caption, MaxMessageLen)
		var cs []channels.MediaChunk
		var run []int
		flush := func() {
			if len(run) > 0 {
				cs = append(cs, channels.MediaChunk{Group: g, Items: run})
				run = nil
			}
		}
		for i, m := range mg.Items {
			if m.Size > limit {
				flush()
				cs = append(cs, channels.MediaChunk{Group: g, Items: []int{i}, Fallback: channels.FallbackText(m, why)})
				continue
			}
			if len(run) == MaxAttachments {
				flush()
			}
			run = append(run, i)
		}
		flush()
		if len(cs) == 0 {
			return nil, strings.TrimSpace(caption + "\n\n" + rest)
		}
		if cs[0].Fallback != "" {
			// The notice is its own message; the caption follows as text.
			return cs, strings.TrimSpace(caption + "\n\n" + rest)
		}
		cs[0].Caption = caption
		return cs, rest
	}
	return channels.MediaChunks(out, plan, func(s string) []string { return channels.SplitMarkdown(s, MaxMessageLen) })
}

// SendMedia implements channels.MediaSender: one message with the chunk's
// files (or its fallback text), posted with the chunk's nonce.
func (a *Adapter) SendMedia(ctx context.Context, out channels.Outbound, i int, c channels.MediaChunk, open channels.MediaOpener) ([]string, error) {
	if c.Fallback != "" {
		out.Interaction = nil // a notice goes to the channel
		text, _ := channels.SplitCaption(c.Fallback, MaxMessageLen)
		id, err := a.SendChunkID(ctx, out, i, text)
		if id == "" {
			return nil, err
		}
		return []string{id}, err
	}
	files, err := c.Files(out)
	if err != nil {
		return nil, channels.Refusal(fmt.Errorf("discord: send media: %w", err))
	}
	to, err := target(out)
	if err != nil {
		return nil, fmt.Errorf("discord: send media: %w", err)
	}
	msg := &discordgo.MessageSend{
		Content: c.Caption,
		AllowedMentions: &discordgo.MessageAllowedMentions{
			Parse: []discordgo.AllowedMentionType{discordgo.AllowedMentionTypeUsers},
		},
	}
	if out.Quotes(i) && out.Interaction == nil {
		no := false
		msg.Reference = &discordgo.MessageReference{MessageID: out.ReplyToID, ChannelID: to, FailIfNotExists: &no}
	}
	payload := messageSendOnce{MessageSend: msg, Nonce: postNonce(out, i), EnforceNonce: true}
	ctype, body, err := multipartBody(payload, files, open)
	if err != nil {
		return nil, fmt.Errorf("discord: send media: %w", err)
	}
	ep := discordgo.EndpointChannelMessages(to)
	var resp []byte
	err = a.rest(ctx, postRoute(to), true, func(opts ...discordgo.RequestOption) (err error) {
		resp, err = a.s.RequestRaw(http.MethodPost, ep, ctype, body, ep, 0, opts...)
		return err
	})
	if err != nil {
		if tooLarge(err) {
			a.log.Warn("discord refused an attachment as too large", zap.String("chat_id", to), zap.Int("files", len(files)))
		}
		return nil, fmt.Errorf("discord: send media (part %d): %w", i+1, answered(err))
	}
	var m discordgo.Message
	if err := json.Unmarshal(resp, &m); err != nil {
		return nil, fmt.Errorf("discord: send media: decode the posted message: %w", err)
	}
	return []string{m.ID}, nil
}

// tooLarge reports Discord's 413 / code 40005 (request entity too large).
func tooLarge(err error) bool {
	re, ok := err.(*discordgo.RESTError)
	if !ok {
		return false
	}
	return (re.Response != nil && re.Response.StatusCode == http.StatusRequestEntityTooLarge) ||
		(re.Message != nil && re.Message.Code == discordgo.ErrCodeRequestEntityTooLarge)
}

// multipartBody is the message post with files: payload_json, then
// files[n] streamed from the store into one buffer sized for them all (one
// allocation of about the files' size; discordgo's own builder grows its
// buffer by doubling).
func multipartBody(payload any, files []channels.OutMedia, open channels.MediaOpener) (string, []byte, error) {
	js, err := json.Marshal(payload)
	if err != nil {
		return "", nil, err
	}
	size := len(js) + 512
	for _, f := range files {
		size += int(f.Size) + 512
	}
	var buf bytes.Buffer
	buf.Grow(size)
	w := multipart.NewWriter(&buf)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="payload_json"`)
	h.Set("Content-Type", "application/json")
	p, err := w.CreatePart(h)
	if err != nil {
		return "", nil, err
	}
	if _, err := p.Write(js); err != nil {
		return "", nil, err
	}
	for n, f := range files {
		name := f.FileName
		if name == "" {
			name = "file"
		}
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="files[%d]"; filename="%s"`, n, quoteEscaper.Replace(name)))
		ct := f.MimeType
		if ct == "" {
			ct = "application/octet-stream"
		}
		h.Set("Content-Type", ct)
		p, err := w.CreatePart(h)
		if err != nil {
			return "", nil, err
		}
		rc, err := open(f)
		if err != nil {
			return "", nil, err
		}
		_, err = io.Copy(p, rc)
		rc.Close()
		if err != nil {
			return "", nil, fmt.Errorf("read %s: %w", name, err)
		}
	}
	if err := w.Close(); err != nil {
		return "", nil, err
	}
	return w.FormDataContentType(), buf.Bytes(), nil
}

var quoteEscaper = strings.NewReplacer("\\", "\\\\", `"`, "\\\"", "\r", "", "\n", "")
