package dispatch

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/channels/discord"
	"github.com/gateway/gateway/channels/discord/discordtest"
)

// TestDiscordAttachmentImageReachesModel: an image attached to a Discord
// DM is fetched from the (fake) CDN and reaches the model as an image.
func TestDiscordAttachmentImageReachesModel(t *testing.T) {
	r := newMediaRig(t, "oa/gpt-4o")
	fake := discordtest.New(discordtest.Options{Token: "tok", NoEcho: true})
	t.Cleanup(fake.Close)
	a, err := discord.New("default", discord.Config{Token: "tok"}, discord.Options{HTTPClient: fake.Client(), Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	r.d.Register(a)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Run(ctx, r.d.Handle) }()
	t.Cleanup(func() { cancel(); <-done })
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := fake.WaitReady(wctx, 1, 0); err != nil {
		t.Fatal(err)
	}
	at := fake.AddAttachment("900", "chart.png", "image/png", pngBytes)
	fake.SendMessageCreate(&discordgo.Message{ChannelID: "900", Content: "explain the chart",
		Author: &discordgo.User{ID: "42", Username: "alice"}, Attachments: []*discordgo.MessageAttachment{at}})
	got := r.lastUserOpenAI(1)
	want := []string{"text:explain the chart", "image:data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes)}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("user message %q, want %q", got, want)
	}
	if d := fake.Downloads(); len(d) != 1 {
		t.Errorf("CDN downloads %v, want 1", d)
	}
}
