package channels

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Media out (issue 23): a reply may carry files the agent sends (photos,
// documents, voice notes, audio). Their bytes are in the outbound media
// store (internal/mediastore), named by SHA-256; a reply names them only by
// that hash, so the outbox stores the reply small and a restart reopens the
// same bytes. Adapters that send files implement MediaSender; their
// Chunker.Chunks puts media chunks (EncodeMediaChunk) after the text
// chunks (MediaChunks), one per platform call (a single file, a Telegram album, a
// Discord message with attachments), so the outbox marks each call like a
// text chunk and a restart sends only the calls not yet marked.

// OutMedia is one file of a reply.
type OutMedia struct {
	Kind     MediaKind `json:"kind"` // image, audio, voice, video or document
	MimeType string    `json:"mimeType"`
	FileName string    `json:"fileName,omitempty"`
	Size     int64     `json:"size"`
	// SHA256 names the bytes in the outbound media store.
	SHA256 string `json:"sha256"`
}

// MediaGroup is files sent together (an album where the platform has
// them) with one caption (Markdown).
type MediaGroup struct {
	Items   []OutMedia `json:"items"`
	Caption string     `json:"caption,omitempty"`
}

// MediaOpener opens the bytes of a reply's file. It fails for content the
// store no longer holds (pruned, or another replica's state dir).
type MediaOpener func(m OutMedia) (io.ReadCloser, error)

// MediaChunk is one platform call of a reply's media: the files Items
// (indexes into Outbound.Media[Group].Items) with Caption, or, when the
// adapter found it cannot send them (over the platform's size limit), the
// text Fallback instead.
type MediaChunk struct {
	Group    int    `json:"g"`
	Items    []int  `json:"i"`
	Caption  string `json:"c,omitempty"`
	Fallback string `json:"f,omitempty"`
}

// mediaChunkPrefix starts an encoded MediaChunk. Text chunks never start
// with NUL (MediaChunks removes it from text).
const mediaChunkPrefix = "\x00media:"

// EncodeMediaChunk encodes c as a chunk string the outbox stores.
func EncodeMediaChunk(c MediaChunk) string {
	b, _ := json.Marshal(c) // ints and strings: cannot fail
	return mediaChunkPrefix + string(b)
}

// DecodeMediaChunk decodes a chunk EncodeMediaChunk made; ok is false for
// a text chunk.
func DecodeMediaChunk(chunk string) (c MediaChunk, ok bool, err error) {
	rest, ok := strings.CutPrefix(chunk, mediaChunkPrefix)
	if !ok {
		return c, false, nil
	}
	if err := json.Unmarshal([]byte(rest), &c); err != nil {
		return c, true, fmt.Errorf("media chunk: %w", err)
	}
	return c, true, nil
}

// Files returns the files of c in out, or an error naming what is missing
// (a stored reply that does not match its chunks).
func (c MediaChunk) Files(out Outbound) ([]OutMedia, error) {
	if c.Group < 0 || c.Group >= len(out.Media) {
		return nil, fmt.Errorf("media chunk: group %d of %d", c.Group, len(out.Media))
	}
	g := out.Media[c.Group].Items
	files := make([]OutMedia, 0, len(c.Items))
	for _, i := range c.Items {
		if i < 0 || i >= len(g) {
			return nil, fmt.Errorf("media chunk: item %d of %d in group %d", i, len(g), c.Group)
		}
		files = append(files, g[i])
	}
	return files, nil
}

// MediaSender is implemented by adapters that send files. The outbox calls
// SendMedia for each media chunk of a reply (Chunker.Chunks made them) and
// marks it once it returns nil.
type MediaSender interface {
	// SendMedia delivers chunk i of out, the media chunk c, reading the
	// files through open; it returns the ids of the messages posted. A
	// chunk with a Fallback posts that text. It retries what is safe to
	// retry itself, like SendChunk.
	SendMedia(ctx context.Context, out Outbound, i int, c MediaChunk, open MediaOpener) ([]string, error)
}

// MediaChunks is the chunks of a reply with media: out.Text split by text
// first (its chunk 0 may replace a streamed draft), then for each group
// the chunks plan makes of it followed by its caption's overflow (what did
// not fit the caption, split by text). plan returns the media chunks of
// group g and the part of its caption left over. NULs are removed from
// text so no text chunk reads as a media chunk.
func MediaChunks(out Outbound, plan func(g int, mg MediaGroup) ([]MediaChunk, string), text func(string) []string) []string {
	chunks := text(strings.ReplaceAll(out.Text, "\x00", ""))
	for g, mg := range out.Media {
		cs, rest := plan(g, mg)
		for _, c := range cs {
			chunks = append(chunks, EncodeMediaChunk(c))
		}
		if strings.TrimSpace(rest) != "" {
			chunks = append(chunks, text(strings.ReplaceAll(rest, "\x00", ""))...)
		}
	}
	return chunks
}

// SplitCaption cuts caption at most max characters (runes) for a media
// message, at a paragraph, line or word break where one is near, and
// returns the part that goes with the media and the rest, which follows as
// text.
func SplitCaption(caption string, max int) (head, rest string) {
	caption = strings.TrimSpace(caption)
	r := []rune(caption)
	if len(r) <= max {
		return caption, ""
	}
	cut := max
	window := string(r[:max])
	for _, sep := range []string{"\n\n", "\n", " "} {
		if i := strings.LastIndex(window, sep); i > len(window)/2 {
			cut = len([]rune(window[:i]))
			break
		}
	}
	return strings.TrimSpace(string(r[:cut])), strings.TrimSpace(string(r[cut:]))
}

// FallbackText is the notice posted instead of a file the platform cannot
// take: its name, size and why.
func FallbackText(m OutMedia, why string) string {
	name := m.FileName
	if name == "" {
		name = string(m.Kind)
	}
	return fmt.Sprintf("📎 %s (%s) could not be attached: %s.", name, HumanSize(m.Size), why)
}

// HumanSize writes n bytes for people: "812 B", "4.2 KB", "12.5 MB".
func HumanSize(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	}
}
