package dispatch

import (
	"context"
	"fmt"
	"io"

	"github.com/gateway/gateway/channels"
)

// DefaultMediaTextKB is the default cap of a text document inlined into a
// message (media.maxTextKb).
const DefaultMediaTextKB = 32

// MediaConfig is the top-level media section: what happens to attachments
// before the model sees them. Size caps are per channel account
// (channels.<ch>.accounts.<id>.mediaMaxMb).
type MediaConfig struct {
	// Audio transcribes voice notes and audio files; without a provider
	// they reach the model as "[media unavailable: ...]".
	Audio AudioConfig `mapstructure:"audio"`
	// MaxTextKB caps a text document (text/*, JSON, Markdown, CSV...)
	// inlined into the message; the rest is cut with a note. Default 32.
	MaxTextKB int `mapstructure:"maxTextKb"`
}

// AudioConfig is media.audio.
type AudioConfig struct {
	// Provider names an entry of providers: of type openai whose
	// /audio/transcriptions endpoint is used ("" disables transcription).
	Provider string `mapstructure:"provider"`
	// Model is the transcription model (default whisper-1).
	Model string `mapstructure:"model"`
}

// DefaultMedia returns the documented defaults.
func DefaultMedia() MediaConfig { return MediaConfig{MaxTextKB: DefaultMediaTextKB} }

// Validate checks c; providerType maps a provider name to its type ("" if
// it is not configured).
func (c MediaConfig) Validate(providerType func(name string) string) error {
	if c.MaxTextKB < 1 || c.MaxTextKB > 1024 {
		return fmt.Errorf("media.maxTextKb: %d is not between 1 and 1024", c.MaxTextKB)
	}
	if c.Audio.Provider == "" {
		if c.Audio.Model != "" {
			return fmt.Errorf("media.audio.model: set without media.audio.provider")
		}
		return nil
	}
	switch t := providerType(c.Audio.Provider); t {
	case "openai":
	case "":
		return fmt.Errorf("media.audio.provider: %q is not in providers", c.Audio.Provider)
	default:
		return fmt.Errorf("media.audio.provider: %q has type %s; transcription needs an openai-compatible provider", c.Audio.Provider, t)
	}
	return nil
}

// Transcriber turns audio into text (agents/openai's Transcribe with the
// configured model bound).
type Transcriber func(ctx context.Context, audio io.Reader, fileName string) (string, error)

// Media is the hot-reloadable media part of a Runtime.
type Media struct {
	// MaxBytes is the size cap of an attachment from an account
	// (mediaMaxMb); nil gives every account channels.DefaultMediaMaxMB.
	MaxBytes func(channels.AccountKey) int64
	// MaxTextBytes caps an inlined text document (default 32 KB).
	MaxTextBytes int
	// Transcribe is nil when media.audio is not configured.
	Transcribe Transcriber
}

func (m Media) maxBytes(k channels.AccountKey) int64 {
	if m.MaxBytes != nil {
		if n := m.MaxBytes(k); n > 0 {
			return n
		}
	}
	return channels.MediaMaxBytes(0)
}

func (m Media) maxText() int {
	if m.MaxTextBytes > 0 {
		return m.MaxTextBytes
	}
	return DefaultMediaTextKB << 10
}
