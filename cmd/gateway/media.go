package main

import (
	"context"
	"io"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents/openai"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/dispatch"
)

// mediaPruneEvery is how often downloads of ended sessions are removed.
const mediaPruneEvery = 10 * time.Minute

// mediaRuntime builds the hot-reloadable media settings: per-account size
// caps (mediaMaxMb) and the transcriber of media.audio.
func mediaRuntime(cfg *configs.Config, log *zap.Logger) (dispatch.Media, error) {
	caps := map[string]int64{}
	for id, a := range cfg.Channels.Telegram.Accounts {
		caps["telegram/"+id] = channels.MediaMaxBytes(a.MediaMaxMb)
	}
	for id, a := range cfg.Channels.Discord.Accounts {
		caps["discord/"+id] = channels.MediaMaxBytes(a.MediaMaxMb)
	}
	m := dispatch.Media{
		MaxBytes:     func(channel, account string) int64 { return caps[channel+"/"+account] },
		MaxTextBytes: cfg.Media.MaxTextKB << 10,
	}
	audio := cfg.Media.Audio
	if audio.Provider == "" {
		return m, nil
	}
	p, err := openai.New(openai.Config{Name: audio.Provider, Provider: cfg.Providers[audio.Provider], Logger: log})
	if err != nil {
		return m, err
	}
	m.Transcribe = func(ctx context.Context, r io.Reader, name string) (string, error) {
		return p.Transcribe(ctx, audio.Model, r, name)
	}
	return m, nil
}
