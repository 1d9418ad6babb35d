package webtest

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gateway/gateway/channels"
)

// choicesView is the question with buttons #messages shows, as it is
// drawn: its markup, and each button's label, state and mark.
const choicesView = `[...document.querySelectorAll("#messages .msg.choices")].map(e => e.outerHTML + " | " +
	[...e.querySelectorAll("button")].map(b => b.textContent + (b.disabled ? ":disabled" : ":enabled") +
		(b.classList.contains("chosen") ? ":chosen" : "")).join(","))`

// TestChatChoicesAfterReload: a question with buttons (the message tool's
// ask) is drawn again, answerable, after a page reload and after a daemon
// restart, as it was live, after its tool call; a press on a redrawn
// button is the answer, and a later reload shows the question answered:
// its buttons disabled, the chosen one marked.
func TestChatChoicesAfterReload(t *testing.T) {
	fake := askingModel(t)
	cfg := Config{OpenAIBaseURL: fake.BaseURL(), AgentTools: []string{"message"}}
	env := Start(t, cfg)
	ctx := browser(t)
	live := askInPage(t, ctx, env)
	order := `[...document.querySelectorAll("#messages .msg")].map(e => e.classList.contains("tool") ? "tool" :
		e.classList.contains("choices") ? "choices" : e.classList.contains("user") ? "user" : "assistant").join(",")`
	liveOrder := value(t, ctx, "live order", chromedp.Evaluate[string](order))
	if len(live) != 1 || !strings.Contains(live[0], "Tea or coffee?") || !strings.HasSuffix(live[0], "| Tea:enabled,Coffee:enabled") {
		t.Fatalf("live question %q", live)
	}

	do(t, ctx, "reload", chromedp.Reload(), chromedp.Poll[chromedp.Void](pageReady+` && `+twoButtons))
	if got := value(t, ctx, "reloaded view", chromedp.Evaluate[[]string](choicesView)); strings.Join(got, "\n") != strings.Join(live, "\n") {
		t.Fatalf("after a reload:\n%s\nlive:\n%s", strings.Join(got, "\n"), strings.Join(live, "\n"))
	}
	if got := value(t, ctx, "reloaded order", chromedp.Evaluate[string](order)); got != liveOrder {
		t.Fatalf("after a reload the messages are %s, live %s", got, liveOrder)
	}

	// A restart: the new daemon (another port) on the same state.
	hash := value(t, ctx, "hash", chromedp.Evaluate[string](`location.hash`))
	env.Stop()
	cfg.StateDir = env.StateDir
	env = Start(t, cfg)
	do(t, ctx, "after a restart",
		chromedp.Navigate(env.URL+"/"+hash),
		chromedp.Poll[chromedp.Void](pageReady+` && `+twoButtons),
	)
	if got := value(t, ctx, "restarted view", chromedp.Evaluate[[]string](choicesView)); strings.Join(got, "\n") != strings.Join(live, "\n") {
		t.Fatalf("after a restart:\n%s\nlive:\n%s", strings.Join(got, "\n"), strings.Join(live, "\n"))
	}

	do(t, ctx, "press",
		chromedp.Click(`#messages .msg.choices button:nth-child(2)`),
		chromedp.Poll[chromedp.Void](`[...document.querySelectorAll("#messages .msg.assistant")].some(e => e.textContent.includes("Coffee it is")) && `+settled),
	)
	if status := value(t, ctx, "status", chromedp.Evaluate[string](`document.getElementById("status").textContent`)); status != "" {
		t.Fatalf("status after the press: %q", status)
	}
	pressed := value(t, ctx, "pressed view", chromedp.Evaluate[[]string](choicesView))
	do(t, ctx, "reload after the press", chromedp.Reload(),
		chromedp.Poll[chromedp.Void](pageReady+` && `+twoButtons+` && [...document.querySelectorAll("#messages .msg.assistant")].some(e => e.textContent.includes("Coffee it is"))`))
	answered := value(t, ctx, "answered view", chromedp.Evaluate[[]string](choicesView))
	if len(answered) != 1 || !strings.HasSuffix(answered[0], "| Tea:disabled,Coffee:disabled:chosen") {
		t.Fatalf("the answered question after a reload: %q", answered)
	}
	if strings.Join(answered, "\n") != strings.Join(pressed, "\n") {
		t.Errorf("answered after a reload:\n%s\nas pressed:\n%s", strings.Join(answered, "\n"), strings.Join(pressed, "\n"))
	}
	if n := len(fake.Requests()); n != 3 {
		t.Fatalf("%d model requests, want 3: the question's two and the press's", n)
	}
	if last := fake.Requests()[2].LastUserText(); !strings.Contains(last, "Coffee") {
		t.Errorf("the press's model input %q, want the label", last)
	}
}

// TestChatChoicesExpiredAfterReload: a question whose buttons expired
// (the buttons' clock moved past channels.DefaultChoiceTTL) is drawn after
// a reload with every button disabled and a note that it expired.
func TestChatChoicesExpiredAfterReload(t *testing.T) {
	fake := askingModel(t)
	var ahead atomic.Int64 // how far the buttons' clock is ahead of time.Now
	env := Start(t, Config{OpenAIBaseURL: fake.BaseURL(), AgentTools: []string{"message"},
		ChoicesNow: func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }})
	ctx := browser(t)
	live := askInPage(t, ctx, env)
	if len(live) != 1 || strings.Contains(live[0], "expired") || !strings.HasSuffix(live[0], "| Tea:enabled,Coffee:enabled") {
		t.Fatalf("live question %q", live)
	}
	do(t, ctx, "reload within the expiry", chromedp.Reload(), chromedp.Poll[chromedp.Void](pageReady+` && `+twoButtons))
	if got := value(t, ctx, "reloaded view", chromedp.Evaluate[[]string](choicesView)); strings.Join(got, "\n") != strings.Join(live, "\n") {
		t.Fatalf("reloaded within the expiry:\n%s\nlive:\n%s", strings.Join(got, "\n"), strings.Join(live, "\n"))
	}

	ahead.Store(int64(channels.DefaultChoiceTTL + time.Hour))
	do(t, ctx, "reload after the expiry", chromedp.Reload(), chromedp.Poll[chromedp.Void](pageReady+` && `+twoButtons))
	expired := value(t, ctx, "expired view", chromedp.Evaluate[[]string](choicesView))
	if len(expired) != 1 || !strings.HasSuffix(expired[0], "| Tea:disabled,Coffee:disabled") {
		t.Fatalf("the expired question after a reload: %q, want its buttons disabled", expired)
	}
	note := value(t, ctx, "note", chromedp.Evaluate[string](`(() => { const n = document.querySelector("#messages .msg.choices .note");
		return n && n.offsetParent !== null ? n.textContent : ""; })()`))
	if note != "This question has expired." {
		t.Fatalf("the expired question's visible note = %q, want that it expired", note)
	}
}

// askInPage opens env's chat page, asks the model (askingModel) and waits
// for its question's two buttons and the turn's end; it returns the
// questions as drawn (choicesView).
func askInPage(t *testing.T, ctx context.Context, env *Env) []string {
	t.Helper()
	do(t, ctx, "ask",
		chromedp.Navigate(env.URL+"/"),
		chromedp.Poll[chromedp.Void](pageReady),
		chromedp.SendKeys("#input", "a drink?"),
		chromedp.Click("#send"),
		chromedp.Poll[chromedp.Void](twoButtons+` && `+settled),
	)
	return value(t, ctx, "live view", chromedp.Evaluate[[]string](choicesView))
}

// twoButtons is true once the page shows a question's two buttons.
const twoButtons = `document.querySelectorAll("#messages .msg.choices button").length === 2`
