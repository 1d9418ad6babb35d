package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	goopenai "github.com/sashabaranov/go-openai"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/discord/discordtest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// Media out (issue 23) end to end: the scripted model calls the message
// tool's send_media on files of its workspace; the reply's text and files
// reach the chat through the outbox.

// mediaOutWorkspace writes n distinct PNG files p1.png … and chart.png
// and returns the directory and each file's SHA-256 by name.
func mediaOutWorkspace(t *testing.T, n int, pad int) (string, map[string]string) {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	sums := map[string]string{}
	write := func(name string, i int) {
		data := append([]byte(fmt.Sprintf("\x89PNG\r\n\x1a\n picture %d ", i)), make([]byte, pad)...)
		if err := os.WriteFile(filepath.Join(ws, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		sums[name] = hex.EncodeToString(sum[:])
	}
	write("chart.png", 0)
	for i := 1; i <= n; i++ {
		write(fmt.Sprintf("p%d.png", i), i)
	}
	return ws, sums
}

// mediaModel answers a user message that names files ("send chart.png
// p1.png | caption") with a send_media call of them and the caption, and
// the tool's result with "Here you go.".
func mediaModel(n int, r openaitest.Request) openaitest.Reply {
	msgs := r.Body.Messages
	if last := msgs[len(msgs)-1]; last.Role == goopenai.ChatMessageRoleTool {
		return openaitest.Reply{Text: "Here you go."}
	}
	text := r.LastUserText()
	i := strings.Index(text, "send ")
	if i < 0 {
		return openaitest.Reply{Text: "reply: " + text}
	}
	spec, caption, _ := strings.Cut(text[i+len("send "):], "|")
	args, _ := json.Marshal(map[string]any{"action": "send_media", "files": strings.Fields(spec), "caption": strings.TrimSpace(caption)})
	return openaitest.Reply{ToolCalls: []openaitest.ToolCall{{ID: fmt.Sprintf("call_%d", n), Name: "message", Arguments: string(args)}}}
}

// TestEndToEndMediaOutTelegram: in a forum topic, the model's tool call
// posts the reply's text and then a photo with its caption, both in the
// topic; three pictures go as one album with the caption on the first.
func TestEndToEndMediaOutTelegram(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	model.SetReply(mediaModel)
	ws, sums := mediaOutWorkspace(t, 3, 0)
	stateDir := filepath.Join(t.TempDir(), "state")
	yaml := strings.Replace(e2eConfig(stateDir, tg, model), `list: [{id: main, systemPrompt: "You are terse."}]`,
		fmt.Sprintf(`list: [{id: main, workspace: %q, tools: {allow: [message]}}]`, ws), 1)
	_, stop := startDaemon(t, yaml)
	defer stop()
	bot := "@" + tg.BotUserName()
	const forum, member = int64(-100600), int64(333)

	tg.Topic(forum, 77, member, bot+" send chart.png | Q3 **sales**")
	photo := waitMethod(t, tg, "sendPhoto", 1)[0]
	if photo.ChatID != forum || photo.ThreadID != 77 || photo.Text != "Q3 <b>sales</b>" || photo.ParseMode != "HTML" ||
		photo.Upload == nil || photo.Upload.SHA256 != sums["chart.png"] || photo.Upload.Name != "chart.png" {
		t.Fatalf("photo %+v (upload %+v), want chart.png in topic 77 with its caption", photo, photo.Upload)
	}
	text := waitReply(t, tg, "Here you go.")
	if text.ThreadID != 77 || text.MessageID > photo.MessageID {
		t.Errorf("reply text %+v: want it in topic 77, before the photo", text)
	}

	tg.Topic(forum, 77, member, bot+" send p1.png p2.png p3.png | three of them")
	album := waitMethod(t, tg, "sendMediaGroup", 3)
	for i, m := range album {
		want := sums[fmt.Sprintf("p%d.png", i+1)]
		if m.ThreadID != 77 || m.MediaGroupID == "" || m.MediaGroupID != album[0].MediaGroupID || m.Upload == nil || m.Upload.SHA256 != want {
			t.Errorf("album message %d: %+v, want p%d.png in topic 77 in one group", i, m, i+1)
		}
	}
	if album[0].Text != "three of them" || album[1].Text != "" || album[2].Text != "" {
		t.Errorf("album captions %q %q %q, want the caption on the first only", album[0].Text, album[1].Text, album[2].Text)
	}
	// The files were kept by content under the state dir, private.
	fi, err := os.Stat(filepath.Join(stateDir, "media-out", sums["p1.png"][:2], sums["p1.png"]))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("stored file: %v %v", fi, err)
	}
}

// waitMethod waits for n messages sent by method and returns them.
func waitMethod(t *testing.T, tg *telegramtest.Server, method string, n int) []telegramtest.Sent {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var got []telegramtest.Sent
		for _, s := range tg.Sent() {
			if s.Method == method {
				got = append(got, s)
			}
		}
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d %s messages, want %d; sent: %+v", len(got), method, n, tg.Sent())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// discordMediaConfig is a daemon on the fake Discord (guild 500, channel
// 600 at boost tier tier, limits 1–4 MB for tiers 0–3) whose agent sends
// files of ws.
func discordMediaConfig(stateDir, listen string, dc *discordtest.Server, model *openaitest.Server, ws string) string {
	return fmt.Sprintf(`stateDir: %s
http: {listen: %q}
log: {level: debug, format: console}
channels:
  discord:
    accounts:
      default:
        token: tok
        apiBase: %q
        slashCommands: "off"
        dmPolicy: open
        uploadLimitsMb: [1, 2, 3, 4]
        guilds: {"500": {requireMention: false}}
providers:
  fake: {type: openai, baseURL: %q, apiKey: test-key, maxRetries: 1}
agents:
  defaults: {model: fake/test-model}
  list: [{id: main, workspace: %q, tools: {allow: [message]}}]
messages:
  queue: {mode: collect, debounce: 20ms}
`, stateDir, listen, dc.URL(), model.BaseURL(), ws)
}

func discordMediaFake(tier discordgo.PremiumTier, onPost func(discordtest.Sent)) *discordtest.Server {
	return discordtest.New(discordtest.Options{Token: "tok", NoEcho: true, OnPost: onPost,
		UploadLimits: [4]int64{1 << 20, 2 << 20, 3 << 20, 4 << 20},
		Guilds: []*discordgo.Guild{{ID: "500", Name: "g", PremiumTier: tier,
			Channels: []*discordgo.Channel{{ID: "600", Name: "general", Type: discordgo.ChannelTypeGuildText}}}}})
}

// TestEndToEndMediaOutDiscordOverLimit: in a tier-0 guild a file over the
// upload limit is not attached: the chat gets a notice naming the file,
// its size and the limit, and the rest of the reply (the other file, the
// caption, the text) goes out.
func TestEndToEndMediaOutDiscordOverLimit(t *testing.T) {
	dc := discordMediaFake(0, nil)
	t.Cleanup(dc.Close)
	model := openaitest.NewServer(t)
	model.SetReply(mediaModel)
	ws, sums := mediaOutWorkspace(t, 2, 0)
	big := append([]byte("\x89PNG\r\n\x1a\n big "), make([]byte, 1<<20+1<<18)...)
	if err := os.WriteFile(filepath.Join(ws, "big.png"), big, 0o600); err != nil {
		t.Fatal(err)
	}
	_, stop := startDaemon(t, discordMediaConfig(filepath.Join(t.TempDir(), "state"), "127.0.0.1:0", dc, model, ws))
	defer stop()
	waitFor(t, 30*time.Second, "the gateway session", func() bool { n, _ := dc.Sessions(); return n > 0 })
	dc.SendMessageCreate(&discordgo.Message{ChannelID: "600", GuildID: "500", Content: "send p1.png big.png | two files",
		Author: &discordgo.User{ID: "42", Username: "alice"}, Type: discordgo.MessageTypeDefault})
	var notice, withFile discordtest.Sent
	waitFor(t, 30*time.Second, "the notice and the attachment", func() bool {
		for _, s := range dc.Sent() {
			if strings.Contains(s.Content, "could not be attached") {
				notice = s
			}
			if len(s.Files) > 0 {
				withFile = s
			}
		}
		return notice.MessageID != "" && withFile.MessageID != ""
	})
	if !strings.Contains(notice.Content, "big.png (1.3 MB) could not be attached: over this server's 1 MB upload limit (boost tier 0)") {
		t.Errorf("notice %q", notice.Content)
	}
	if len(withFile.Files) != 1 || withFile.Files[0].SHA256 != sums["p1.png"] || withFile.Content != "two files" {
		t.Errorf("attachment post %+v, want p1.png with the caption", withFile)
	}
	for _, s := range dc.Sent() {
		for _, f := range s.Files {
			if f.Name == "big.png" {
				t.Errorf("big.png was attached: %+v", s)
			}
		}
	}
	waitFor(t, 10*time.Second, "the reply text", func() bool {
		for _, s := range dc.Sent() {
			if s.Content == "Here you go." {
				return true
			}
		}
		return false
	})
}
