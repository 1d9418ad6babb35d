package webtest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/gateway/gateway/agents/openai/openaitest"
)

// TestChatChoiceButtons: the model asks with buttons (the message tool's
// ask); the page shows them in the turn, a click disables them all and
// sends the label to the same session, whose next model call reads it.
func TestChatChoiceButtons(t *testing.T) {
	fake := askingModel(t)
	env := Start(t, Config{OpenAIBaseURL: fake.BaseURL(), AgentTools: []string{"message"}})
	ctx := browser(t)
	do(t, ctx, "ask",
		chromedp.Navigate(env.URL+"/"),
		chromedp.Poll[chromedp.Void](pageReady),
		chromedp.SendKeys("#input", "a drink?"),
		chromedp.Click("#send"),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll("#messages .msg.choices button").length === 2 && `+settled),
	)
	do(t, ctx, "press",
		chromedp.Click(`#messages .msg.choices button:nth-child(2)`),
		chromedp.Poll[chromedp.Void](`[...document.querySelectorAll("#messages .msg.assistant")].some(e => e.textContent.includes("Coffee it is")) && `+settled),
	)
	disabled := value(t, ctx, "buttons", chromedp.Evaluate[[]bool](`[...document.querySelectorAll("#messages .msg.choices button")].map(b => b.disabled)`))
	if len(disabled) != 2 || !disabled[0] || !disabled[1] {
		t.Errorf("buttons disabled = %v, want both after the press", disabled)
	}
	reqs := fake.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	var last string
	for _, m := range reqs[2].Body.Messages {
		if m.Role == "user" {
			last = m.Content
		}
	}
	if !strings.Contains(last, "Coffee") || !strings.Contains(reqs[2].Body.Messages[0].Content, "a drink?") {
		t.Errorf("third request's messages = %+v, want the first question and then the press in one session", reqs[2].Body.Messages)
	}
}

// askingModel is a fake model that asks "Tea or coffee?" with a button
// for each (the message tool's ask), says "Asked.", then answers the
// press "Coffee it is.".
func askingModel(t *testing.T) *openaitest.Server {
	t.Helper()
	fake := openaitest.NewServer(t)
	ask, _ := json.Marshal(map[string]any{"action": "ask", "text": "Tea or coffee?", "choices": []string{"Tea", "Coffee"}})
	fake.Script(
		openaitest.Reply{ToolCalls: []openaitest.ToolCall{{ID: "c1", Name: "message", Arguments: string(ask)}}},
		openaitest.Reply{Text: "Asked."},
		openaitest.Reply{Text: "Coffee it is."},
	)
	return fake
}
