package webtest

import (
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// refuseChatPosts makes the page's first n chat posts answered as the
// gateway answers them while it starts or shuts down (503 with
// Retry-After: the message was not taken); window.__refused counts them.
func refuseChatPosts(n int) string {
	return `(() => {
  const real = window.fetch.bind(window);
  window.__refused = 0;
  window.fetch = async (url, opts) => {
    if (String(url).endsWith("/chat") && window.__refused < ` + strconv.Itoa(n) + `) {
      window.__refused++;
      return new Response(JSON.stringify({error: "message not accepted: the gateway is shutting down; try again in a moment"}),
        {status: 503, statusText: "Service Unavailable", headers: {"Content-Type": "application/json", "Retry-After": "1"}});
    }
    return real(url, opts);
  };
})(); undefined`
}

// TestPageSendsAgainWhileTheGatewayRestarts: a message sent while the
// gateway shuts down for a restart (or is starting) is answered 503 with
// Retry-After, not taken; the page sends it again until the gateway takes
// it, as it does while no connection is made. It gave up after five
// tries (a few seconds: less than the shutdown's grace period) and the
// person had to type the message again.
func TestPageSendsAgainWhileTheGatewayRestarts(t *testing.T) {
	env := Start(t, Config{})
	ctx := browser(t)
	do(t, ctx, "load",
		chromedp.Navigate(env.URL+"/"),
		chromedp.Poll[chromedp.Void](pageReady),
		chromedp.Evaluate[chromedp.Void](refuseChatPosts(5)),
		chromedp.SendKeys("#input", "during the restart"),
		chromedp.Click("#send"),
	)
	value(t, ctx, "settled", chromedp.Poll[bool](settled+` && window.__refused === 5`))
	view := value(t, ctx, "messages", chromedp.Evaluate[[]string](transcriptView))
	if want := []string{"user|during the restart", "assistant|echo: during the restart"}; strings.Join(view, "\n") != strings.Join(want, "\n") {
		t.Errorf("messages:\n%s\nwant:\n%s", strings.Join(view, "\n"), strings.Join(want, "\n"))
	}
	if status := value(t, ctx, "status", chromedp.Evaluate[string](`document.getElementById("status").textContent`)); status != "" {
		t.Errorf("status %q after the message was taken", status)
	}
}
