package channels

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// MediaKind is what an attachment is, as far as the gateway cares.
type MediaKind string

// Attachment kinds.
const (
	MediaImage    MediaKind = "image"
	MediaAudio    MediaKind = "audio"
	MediaVoice    MediaKind = "voice"
	MediaVideo    MediaKind = "video"
	MediaDocument MediaKind = "document"
	MediaSticker  MediaKind = "sticker"
)

// DefaultMediaMaxMB is the default size cap of one attachment (mediaMaxMb).
const DefaultMediaMaxMB = 20

// MaxMediaMaxMB is the largest mediaMaxMb accepted.
const MaxMediaMaxMB = 2000

// MediaMaxBytes converts a mediaMaxMb setting to bytes (0: the default).
func MediaMaxBytes(mb int) int64 {
	if mb <= 0 {
		mb = DefaultMediaMaxMB
	}
	return int64(mb) << 20
}

// Attachment is one file that came with an inbound message. It is journaled
// with the message, so it carries a reference the adapter can fetch again
// after a restart (Ref), or, for channels that receive the bytes inline
// (the web chat), the bytes themselves (Data).
type Attachment struct {
	Kind     MediaKind `json:"kind"`
	MimeType string    `json:"mimeType,omitempty"`
	// Size in bytes as the platform reported it (0 if unknown).
	Size     int64  `json:"size,omitempty"`
	FileName string `json:"fileName,omitempty"`
	// Ref is the platform's reference: a Telegram file_id, a Discord
	// attachment URL. Only the adapter that produced it interprets it.
	Ref string `json:"ref,omitempty"`
	// Data holds inline content (web chat images); Ref is empty then.
	Data []byte `json:"data,omitempty"`
}

// Label names the attachment for a text note: its file name, else its kind.
func (a Attachment) Label() string {
	if a.FileName != "" {
		return a.FileName
	}
	return string(a.Kind)
}

// ErrMediaTooLarge is returned (wrapped in a *MediaTooLargeError) when an
// attachment is larger than the cap it was fetched with.
var ErrMediaTooLarge = errors.New("media too large")

// MediaTooLargeError carries the size found (at least; a download is cut
// as soon as it passes the cap) and the cap.
type MediaTooLargeError struct {
	Size, Max int64
}

func (e *MediaTooLargeError) Error() string {
	return fmt.Sprintf("media too large: %d bytes or more, limit %d", e.Size, e.Max)
}

// Unwrap makes errors.Is(err, ErrMediaTooLarge) true.
func (e *MediaTooLargeError) Unwrap() error { return ErrMediaTooLarge }

// Media is a fetched attachment's content. The caller closes Body.
type Media struct {
	Body io.ReadCloser
	// MimeType as the platform served it ("" if it said nothing useful).
	MimeType string
	// Size is the announced length (-1 if unknown).
	Size int64
}

// MediaFetcher is implemented by adapters whose attachments are fetched
// from the platform (Telegram getFile, Discord's CDN).
type MediaFetcher interface {
	// FetchMedia opens att's content. It fails with a *MediaTooLargeError
	// without downloading when the platform announces more than maxBytes;
	// the caller still counts what it reads (an announcement may be absent
	// or wrong). It never contacts a host other than the account's
	// configured API or CDN.
	FetchMedia(ctx context.Context, att Attachment, maxBytes int64) (Media, error)
}

// LimitedReader returns r cut after max bytes: reading byte max+1 fails
// with a *MediaTooLargeError, so a body that lied about its size is never
// read whole.
func LimitedReader(r io.Reader, max int64) io.Reader {
	return &limited{r: r, max: max}
}

type limited struct {
	r    io.Reader
	max  int64
	read int64
}

func (l *limited) Read(p []byte) (int, error) {
	if l.read > l.max {
		return 0, &MediaTooLargeError{Size: l.read, Max: l.max}
	}
	if room := l.max + 1 - l.read; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := l.r.Read(p)
	l.read += int64(n)
	if l.read > l.max {
		return n, &MediaTooLargeError{Size: l.read, Max: l.max}
	}
	return n, err
}

// MediaFromResponse turns a download's HTTP response into Media capped at
// maxBytes: a non-200 status is an error, an announced size over the cap
// is a *MediaTooLargeError before any byte is read, and the body stops
// with one past the cap while it is read. The body is closed on error;
// otherwise closing the Media's Body closes it.
func MediaFromResponse(res *http.Response, maxBytes int64) (Media, error) {
	if res.StatusCode != http.StatusOK {
		res.Body.Close()
		return Media{}, fmt.Errorf("HTTP %d", res.StatusCode)
	}
	if res.ContentLength > maxBytes {
		res.Body.Close()
		return Media{}, &MediaTooLargeError{Size: res.ContentLength, Max: maxBytes}
	}
	body := struct {
		io.Reader
		io.Closer
	}{LimitedReader(res.Body, maxBytes), res.Body}
	return Media{Body: body, MimeType: res.Header.Get("Content-Type"), Size: res.ContentLength}, nil
}
