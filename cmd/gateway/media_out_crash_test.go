package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/discord/discordtest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// SIGKILL in the middle of a reply's media (issue 23): twelve pictures go
// as two posts (Discord: 10 and 2 attachments; Telegram: albums of 10 and
// 2) after the reply's text. The built daemon is killed while the platform
// takes the first post, after it created the messages and before the
// daemon hears so; the restarted daemon finishes the reply from the
// outbox.

// mediaCrashDaemon writes yaml as a crash daemon's config under base.
func mediaCrashDaemon(t *testing.T, base, yaml string) *crashDaemon {
	t.Helper()
	d := &crashDaemon{t: t, logs: filepath.Join(base, "logs")}
	if err := os.MkdirAll(d.logs, 0o700); err != nil {
		t.Fatal(err)
	}
	d.cfg = filepath.Join(d.logs, "gateway.yaml")
	if err := os.WriteFile(d.cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return d
}

// killOnce makes the first call of its hook block until the test
// goroutine has SIGKILLed the daemon.
type killOnce struct {
	once   sync.Once
	asked  chan struct{}
	killed chan struct{}
}

func newKillOnce() *killOnce {
	return &killOnce{asked: make(chan struct{}), killed: make(chan struct{})}
}

// hook is called by the fake while it answers a post.
func (k *killOnce) hook() {
	k.once.Do(func() {
		close(k.asked)
		<-k.killed
	})
}

// await kills d once the hook asked, within limit.
func (k *killOnce) await(t *testing.T, d *crashDaemon, limit time.Duration) {
	t.Helper()
	select {
	case <-k.asked:
	case <-time.After(limit):
		t.Fatalf("no media post within %s; the daemon's log ends:\n%s", limit, logTail(filepath.Join(d.logs, "run-001.log"), 80))
	}
	d.kill()
	close(k.killed)
}

const twelvePictures = "send p1.png p2.png p3.png p4.png p5.png p6.png p7.png p8.png p9.png p10.png p11.png p12.png | a dozen"

// TestMediaOutCrashDiscordPostsOnce: every post carries its chunk's nonce,
// so the restarted daemon's resend of the post in flight creates nothing:
// each picture, the caption and the text show once.
func TestMediaOutCrashDiscordPostsOnce(t *testing.T) {
	k := newKillOnce()
	dc := discordMediaFake(0, func(s discordtest.Sent) {
		if len(s.Files) > 0 {
			k.hook()
		}
	})
	t.Cleanup(dc.Close)
	model := openaitest.NewServer(t)
	model.SetReply(mediaModel)
	ws, sums := mediaOutWorkspace(t, 12, 0)
	base := t.TempDir()
	d := mediaCrashDaemon(t, base, "")
	d.addr = freeAddr(t)
	if err := os.WriteFile(d.cfg, []byte(strings.Replace(discordMediaConfig(filepath.Join(base, "state"), d.addr, dc, model, ws),
		"log: {level: debug, format: console}", "log: {level: info, format: console}", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	d.start()
	t.Cleanup(func() {
		if d.cmd.ProcessState == nil {
			d.kill()
		}
	})
	waitFor(t, 30*time.Second, "the gateway session", func() bool { n, _ := dc.Sessions(); return n > 0 })
	dc.SendMessageCreate(&discordgo.Message{ChannelID: "600", GuildID: "500", Content: twelvePictures,
		Author: &discordgo.User{ID: "42", Username: "alice"}, Type: discordgo.MessageTypeDefault})
	k.await(t, d, 60*time.Second)
	d.start()
	defer d.stop()
	waitFor(t, 60*time.Second, "all twelve pictures", func() bool {
		n := 0
		for _, s := range dc.Sent() {
			n += len(s.Files)
		}
		return n >= 12
	})
	time.Sleep(500 * time.Millisecond) // a duplicate would come right after
	seen := map[string]int{}
	texts := map[string]int{}
	for _, s := range dc.Sent() {
		for _, f := range s.Files {
			seen[f.SHA256]++
		}
		if len(s.Files) == 0 {
			texts[s.Content]++
		}
	}
	for i := 1; i <= 12; i++ {
		if n := seen[sums[fmt.Sprintf("p%d.png", i)]]; n != 1 {
			t.Errorf("p%d.png posted %d times, want once", i, n)
		}
	}
	if texts["Here you go."] != 1 {
		t.Errorf("reply text posts %v, want one", texts)
	}
	if dc.NonceRepeats() < 1 {
		t.Errorf("no resend was answered by the first post: the kill did not land between Discord's acceptance and the mark")
	}
	t.Logf("%d posts, %d resends answered by the first post", len(dc.Sent()), dc.NonceRepeats())
}

// TestMediaOutCrashTelegramInsideWindow: the Bot API has no idempotency
// key, so the album in flight at the kill is posted again (the documented
// window, SPEC §3.7) — and nothing else: the text and the second album
// once.
func TestMediaOutCrashTelegramInsideWindow(t *testing.T) {
	k := newKillOnce()
	tg := telegramtest.Start(t, telegramtest.Options{OnSent: func(s telegramtest.Sent, _ time.Time) {
		if s.Method == "sendMediaGroup" {
			k.hook()
		}
	}})
	model := openaitest.NewServer(t)
	model.SetReply(mediaModel)
	ws, sums := mediaOutWorkspace(t, 12, 0)
	base := t.TempDir()
	d := mediaCrashDaemon(t, base, "")
	d.addr = freeAddr(t)
	yaml := strings.Replace(e2eConfig(filepath.Join(base, "state"), tg, model), `list: [{id: main, systemPrompt: "You are terse."}]`,
		fmt.Sprintf(`list: [{id: main, workspace: %q, tools: {allow: [message]}}]`, ws), 1)
	yaml = strings.Replace(yaml, `http: {listen: "127.0.0.1:0"}`, fmt.Sprintf(`http: {listen: %q}`, d.addr), 1)
	if err := os.WriteFile(d.cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	d.start()
	t.Cleanup(func() {
		if d.cmd.ProcessState == nil {
			d.kill()
		}
	})
	tg.DM(5252, twelvePictures)
	k.await(t, d, 60*time.Second)
	d.start()
	defer d.stop()
	waitFor(t, 60*time.Second, "the second album", func() bool {
		for _, s := range tg.Sent() {
			if s.Upload != nil && s.Upload.SHA256 == sums["p12.png"] {
				return true
			}
		}
		return false
	})
	time.Sleep(500 * time.Millisecond)
	seen := map[string]int{}
	texts := 0
	for _, s := range tg.Sent() {
		if s.Upload != nil {
			seen[s.Upload.SHA256]++
		} else if s.Text == "Here you go." {
			texts++
		}
	}
	for i := 1; i <= 12; i++ {
		want := 1
		if i <= 10 {
			want = 2 // the album in flight at the kill: inside the window
		}
		if n := seen[sums[fmt.Sprintf("p%d.png", i)]]; n != want {
			t.Errorf("p%d.png posted %d times, want %d", i, n, want)
		}
	}
	if texts != 1 {
		t.Errorf("reply text posted %d times, want once (it was marked before the kill)", texts)
	}
}
