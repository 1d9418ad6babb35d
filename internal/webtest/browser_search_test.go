package webtest

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestPageSearch drives the page's search box: two chats, a search that
// finds one of them, a click that opens it.
func TestPageSearch(t *testing.T) {
	const token = "browser-token"
	env := Start(t, Config{Token: token})
	ctx := browser(t)
	do(t, ctx, "token prompt",
		chromedp.Navigate(env.URL+"/"),
		chromedp.WaitVisible("#auth"),
		chromedp.SendKeys("#token", token),
		chromedp.Click("#token-save"),
		chromedp.Poll[chromedp.Void](pageReady),
	)
	for _, text := range []string{"the zeppelin is parked in hangar nine", "nothing to see here"} {
		do(t, ctx, "chat",
			chromedp.Click("#new-chat"),
			chromedp.SendKeys("#input", text),
			chromedp.Click("#send"),
			chromedp.Poll[chromedp.Void](`(() => { const b = document.querySelector("#messages .msg.assistant");
				return b && !b.classList.contains("streaming"); })()`),
		)
	}
	var sid string
	for _, s := range apiSessions(t, env, token) {
		if strings.HasPrefix(s["title"].(string), "the zeppelin") {
			sid = s["sessionId"].(string)
		}
	}
	if sid == "" {
		t.Fatalf("no session titled after the zeppelin message: %v", apiSessions(t, env, token))
	}
	do(t, ctx, "search",
		chromedp.SendKeys("#search", "Zeppelin hangar"+kb.Enter),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll("#search-results li.hit").length === 2`),
	)
	hits := value(t, ctx, "hits", chromedp.Evaluate[[]string](
		`[...document.querySelectorAll("#search-results li.hit .snippet")].map(e => e.textContent)`))
	want := "echo: the zeppelin is parked in hangar nine\nthe zeppelin is parked in hangar nine"
	if strings.Join(hits, "\n") != want {
		t.Errorf("hits:\n%s\nwant:\n%s", strings.Join(hits, "\n"), want)
	}
	do(t, ctx, "open a hit",
		chromedp.Click(`#search-results li.hit`),
		chromedp.Poll[chromedp.Void](`location.hash.endsWith("`+sid+`") &&
			document.querySelector("#messages .msg.user")?.textContent === "the zeppelin is parked in hangar nine"`),
		chromedp.WaitNotVisible("#search-results"),
	)
	do(t, ctx, "no match",
		chromedp.SendKeys("#search", "kubernetes"+kb.Enter),
		chromedp.Poll[chromedp.Void](`(() => { const e = document.querySelector("#search-results li.none");
			return e && e.textContent === "No messages match."; })()`),
		chromedp.SendKeys("#search", kb.Escape),
		chromedp.WaitNotVisible("#search-results"),
	)
}
