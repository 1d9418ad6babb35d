package discord

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/gateway/gateway/channels"
)

var _ channels.MediaFetcher = (*Adapter)(nil)

// cdnHosts are the hosts Discord serves attachments from; FetchMedia
// contacts no other (except the configured apiBase's host).
var cdnHosts = map[string]bool{"cdn.discordapp.com": true, "media.discordapp.net": true}

// attachments lists m's files; the reference is the attachment's CDN URL
// (journaled with the message, fetched at turn time).
func attachments(m *discordgo.Message) []channels.Attachment {
	var out []channels.Attachment
	for _, at := range m.Attachments {
		if at == nil || at.URL == "" {
			continue
		}
		mime := strings.ToLower(strings.TrimSpace(strings.Split(at.ContentType, ";")[0]))
		kind := channels.MediaDocument
		switch {
		case strings.HasPrefix(mime, "image/"):
			kind = channels.MediaImage
		case strings.HasPrefix(mime, "audio/") && at.Waveform != "":
			kind = channels.MediaVoice // a voice message carries a waveform
		case strings.HasPrefix(mime, "audio/"):
			kind = channels.MediaAudio
		case strings.HasPrefix(mime, "video/"):
			kind = channels.MediaVideo
		}
		out = append(out, channels.Attachment{Kind: kind, MimeType: at.ContentType, Size: int64(at.Size),
			FileName: at.Filename, Ref: at.URL})
	}
	return out
}

// stickers are text placeholders: the model cannot use them.
func stickers(m *discordgo.Message) string {
	var b []string
	for _, st := range m.StickerItems {
		if st != nil {
			b = append(b, "[sticker: "+st.Name+"]")
		}
	}
	return strings.Join(b, "\n")
}

// FetchMedia implements channels.MediaFetcher: a GET of the attachment's
// URL, which must be https on Discord's CDN (or the configured apiBase's
// host); the size is checked before and during the download.
func (a *Adapter) FetchMedia(ctx context.Context, att channels.Attachment, maxBytes int64) (channels.Media, error) {
	if att.Size > maxBytes {
		return channels.Media{}, &channels.MediaTooLargeError{Size: att.Size, Max: maxBytes}
	}
	u, err := url.Parse(att.Ref)
	if err != nil || !a.mediaHost(u) {
		return channels.Media{}, fmt.Errorf("discord: fetch media: %q is not a Discord CDN URL", att.Ref)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return channels.Media{}, fmt.Errorf("discord: fetch media: %w", err)
	}
	res, err := a.s.Client.Do(req)
	if err != nil {
		return channels.Media{}, fmt.Errorf("discord: fetch media: %w", err)
	}
	m, err := channels.MediaFromResponse(res, maxBytes)
	if err != nil {
		return channels.Media{}, fmt.Errorf("discord: fetch media: %w", err)
	}
	return m, nil
}

// mediaHost reports whether u may be fetched: https on Discord's CDN, or
// the host of the account's apiBase (a proxy or a fake).
func (a *Adapter) mediaHost(u *url.URL) bool {
	if u.User != nil {
		return false
	}
	if u.Scheme == "https" && cdnHosts[strings.ToLower(u.Host)] {
		return true
	}
	if a.cfg.APIBase == "" {
		return false
	}
	base, err := url.Parse(a.cfg.APIBase)
	return err == nil && u.Scheme == base.Scheme && strings.EqualFold(u.Host, base.Host)
}
