package webtest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/gateway/gateway/agents/openai/openaitest"
)

// mediaView lists the reply files #messages shows, in order with the
// texts around them: "media|<link text>|<img?>", "assistant|text",
// "user|text".
const mediaView = `[...document.querySelectorAll("#messages .msg")].map(e =>
	e.classList.contains("media") ? "media|" + ((e.querySelector("a") || {}).textContent || "") + "|" + (e.querySelector("img") ? "img" : "") :
	(e.classList.contains("user") ? "user|" : e.classList.contains("assistant") ? "assistant|" : "other|") +
	e.textContent.replace(/Copy/g, "").trim().slice(0, 40))`

// TestChatMediaAfterReload: a reply's file (the message tool's send_media)
// is shown after the reply's text, and again, in the same place, after a
// page reload: the page reads it from the tool result in the transcript.
func TestChatMediaAfterReload(t *testing.T) {
	ws := t.TempDir()
	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 64)...)
	if err := os.WriteFile(filepath.Join(ws, "chart.png"), png, 0o600); err != nil {
		t.Fatal(err)
	}
	send, _ := json.Marshal(map[string]any{"action": "send_media", "files": []string{"chart.png"}, "caption": "Q3"})
	fake := openaitest.NewServer(t)
	fake.Script(
		openaitest.Reply{ToolCalls: []openaitest.ToolCall{{ID: "c1", Name: "message", Arguments: string(send)}}},
		openaitest.Reply{Text: "Here you go."},
		openaitest.Reply{Text: "Anything else?"},
	)
	env := Start(t, Config{OpenAIBaseURL: fake.BaseURL(), AgentTools: []string{"message"}, Workspace: ws})
	ctx := browser(t)
	const shown = `document.querySelectorAll("#messages .msg.media img").length === 1`
	do(t, ctx, "send",
		chromedp.Navigate(env.URL+"/"),
		chromedp.Poll[chromedp.Void](pageReady),
		chromedp.SendKeys("#input", "the chart please"),
		chromedp.Click("#send"),
		chromedp.Poll[chromedp.Void](shown+` && `+settled),
		chromedp.SendKeys("#input", "thanks"),
		chromedp.Click("#send"),
		chromedp.Poll[chromedp.Void](`[...document.querySelectorAll("#messages .msg.assistant")].some(e => e.textContent.includes("Anything else")) && `+settled),
	)
	live := value(t, ctx, "live view", chromedp.Evaluate[[]string](mediaView))
	do(t, ctx, "reload", chromedp.Reload(), chromedp.Poll[chromedp.Void](pageReady+` && `+shown))
	reloaded := value(t, ctx, "reloaded view", chromedp.Evaluate[[]string](mediaView))
	var files []string
	for _, v := range reloaded {
		if strings.HasPrefix(v, "media|") {
			files = append(files, v)
		}
	}
	if len(files) != 1 || !strings.HasPrefix(files[0], "media|chart.png (") || !strings.HasSuffix(files[0], "|img") {
		t.Fatalf("files after a reload %q, want chart.png shown as a picture", files)
	}
	if strings.Join(reloaded, "\n") != strings.Join(live, "\n") {
		t.Errorf("after a reload:\n%s\nlive:\n%s", strings.Join(reloaded, "\n"), strings.Join(live, "\n"))
	}
}
