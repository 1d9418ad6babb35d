package openai

import (
	"context"
	"fmt"
	"io"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"
)

// DefaultTranscriptionModel is the model media.audio uses when none is set.
const DefaultTranscriptionModel = goopenai.Whisper1

// Transcribe sends audio to the provider's /audio/transcriptions endpoint
// (OpenAI-compatible: OpenAI, Groq, a local whisper server) and returns the
// text. fileName tells the server the format ("voice.ogg"); it is not a
// path and nothing is read from disk.
func (p *Provider) Transcribe(ctx context.Context, model string, audio io.Reader, fileName string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	if audio == nil { // the SDK would open fileName from disk
		return "", fmt.Errorf("openai: transcription: no audio")
	}
	if model == "" {
		model = DefaultTranscriptionModel
	}
	if fileName == "" || strings.ContainsAny(fileName, "/\\") {
		fileName = "audio"
	}
	res, err := p.audio.CreateTranscription(ctx, goopenai.AudioRequest{
		Model: model, FilePath: fileName, Reader: audio, Format: goopenai.AudioResponseFormatJSON,
	})
	if err != nil {
		return "", fmt.Errorf("openai: transcription: %w", err)
	}
	return strings.TrimSpace(res.Text), nil
}
