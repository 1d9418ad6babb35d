package discord

import (
	"context"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/gateway/gateway/channels"
)

func BenchmarkSplit(b *testing.B) {
	text := "intro\n```go\n" + strings.Repeat("fmt.Println(\"a fairly long line of code\")\n", 200) + "```\n" + strings.Repeat("tail ", 1000)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if len(channels.SplitMarkdown(text, MaxMessageLen)) < 2 {
			b.Fatal("not split")
		}
	}
}

func BenchmarkInbound(b *testing.B) {
	a, err := New("default", Config{Token: "tok"}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	a.botID = "1000"
	if err := a.s.State.GuildAdd(&discordgo.Guild{ID: "500", Threads: []*discordgo.Channel{
		{ID: "700", GuildID: "500", Type: discordgo.ChannelTypeGuildPublicThread, ParentID: "600"}}}); err != nil {
		b.Fatal(err)
	}
	bot := &discordgo.User{ID: "1000"}
	m := &discordgo.Message{ID: "1", ChannelID: "700", GuildID: "500", Author: alice,
		Content: "<@1000> what is the weather like", Mentions: []*discordgo.User{bot}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if in, ok := a.inbound(ctx, m); !ok || in.ThreadID != "700" {
			b.Fatal("not accepted")
		}
	}
}
