package webtest

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// dropAfterTwoEvents wraps the page's fetch: the first chat POST's stream
// passes its first two events (the turn event and the first delta) and then
// fails as a dropped connection does; the Last-Event-ID of each resume
// request is noted in window.__resumes.
const dropAfterTwoEvents = `(() => {
  const real = window.fetch.bind(window);
  window.__resumes = [];
  window.__dropped = false;
  window.fetch = async (url, opts) => {
    if (String(url).includes("/chat/turns/")) {
      window.__resumes.push((opts && opts.headers && opts.headers["Last-Event-ID"]) || "");
    }
    const res = await real(url, opts);
    if (!String(url).endsWith("/chat") || window.__dropped) return res;
    window.__dropped = true;
    const reader = res.body.getReader();
    const dec = new TextDecoder(), enc = new TextEncoder();
    let buf = "", passed = 0;
    const body = new ReadableStream({
      async pull(ctrl) {
        for (;;) {
          const i = buf.indexOf("\n\n");
          if (i >= 0) {
            ctrl.enqueue(enc.encode(buf.slice(0, i + 2)));
            buf = buf.slice(i + 2);
            if (++passed === 2) {
              reader.cancel();
              ctrl.error(new TypeError("network error (dropped by the test)"));
            }
            return;
          }
          const { value, done } = await reader.read();
          if (done) { ctrl.close(); return; }
          buf += dec.decode(value, { stream: true });
        }
      },
    });
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
})(); undefined`

// TestPageResumesADroppedReply: the chat stream drops after the first
// delta; the page reconnects by itself with Last-Event-ID and shows the
// reply once, whole.
func TestPageResumesADroppedReply(t *testing.T) {
	env := Start(t, Config{})
	ctx := browser(t)
	do(t, ctx, "load",
		chromedp.Navigate(env.URL+"/"),
		chromedp.Poll[chromedp.Void](pageReady),
		chromedp.Evaluate[chromedp.Void](dropAfterTwoEvents),
		chromedp.SendKeys("#input", "hello browser"),
		chromedp.Click("#send"),
	)
	reply := value(t, ctx, "resumed reply", chromedp.Poll[string](`(() => {
		const b = document.querySelector("#messages .msg.assistant");
		return b && !b.classList.contains("streaming") &&
			document.getElementById("sessions").getAttribute("aria-busy") === "false" && b.textContent; })()`))
	if reply != "echo: hello browser" {
		t.Errorf("reply %q, want %q once", reply, "echo: hello browser")
	}
	bubbles := value(t, ctx, "bubbles", chromedp.Evaluate[[]string](
		`[...document.querySelectorAll("#messages .msg")].map(e => e.className + "|" + e.textContent)`))
	if want := []string{"msg user|hello browser", "msg assistant md|echo: hello browser"}; strings.Join(bubbles, "\n") != strings.Join(want, "\n") {
		t.Errorf("messages:\n%s\nwant:\n%s", strings.Join(bubbles, "\n"), strings.Join(want, "\n"))
	}
	resumes := value(t, ctx, "resumes", chromedp.Evaluate[[]string](`window.__resumes`))
	if len(resumes) != 1 || !strings.HasSuffix(resumes[0], "/1") {
		t.Errorf("resume requests with Last-Event-ID %q, want one after event 1 (the first delta)", resumes)
	}
	if status := value(t, ctx, "status", chromedp.Evaluate[string](`document.getElementById("status").textContent`)); status != "" {
		t.Errorf("status line %q after the resume, want it cleared", status)
	}
}

// loseFirstAnswer wraps the page's fetch: the first chat post reaches the
// daemon but its answer is lost (the page sees a network error); the
// bodies of the chat posts are noted in window.__posts.
const loseFirstAnswer = `(() => {
  const real = window.fetch.bind(window);
  window.__posts = [];
  let lost = false;
  window.fetch = async (url, opts) => {
    const post = String(url).endsWith("/chat");
    if (post) window.__posts.push(opts.body);
    const res = await real(url, opts);
    if (post && !lost) {
      lost = true;
      res.body.cancel();
      throw new TypeError("network error (answer lost by the test)");
    }
    return res;
  };
})(); undefined`

// TestPageSendsAgainWhenTheAnswerIsLost: the chat post was taken but its
// answer never came; the page sends it again with the same request id and
// shows the one reply once (the daemon ran one turn).
func TestPageSendsAgainWhenTheAnswerIsLost(t *testing.T) {
	env := Start(t, Config{})
	ctx := browser(t)
	do(t, ctx, "load",
		chromedp.Navigate(env.URL+"/"),
		chromedp.Poll[chromedp.Void](pageReady),
		chromedp.Evaluate[chromedp.Void](loseFirstAnswer),
		chromedp.SendKeys("#input", "hello again"),
		chromedp.Click("#send"),
	)
	reply := value(t, ctx, "reply", chromedp.Poll[string](`(() => {
		const b = document.querySelector("#messages .msg.assistant");
		return b && !b.classList.contains("streaming") &&
			document.getElementById("sessions").getAttribute("aria-busy") === "false" && b.textContent; })()`))
	if reply != "echo: hello again" {
		t.Errorf("reply %q, want %q once", reply, "echo: hello again")
	}
	posts := value(t, ctx, "posts", chromedp.Evaluate[[]string](`window.__posts`))
	if len(posts) != 2 || posts[0] != posts[1] || !strings.Contains(posts[0], `"requestId":"`) {
		t.Errorf("chat posts %q, want the same body, with its request id, twice", posts)
	}
	list := apiSessions(t, env, "")
	if len(list) != 1 || list[0]["messageCount"].(float64) != 2 {
		t.Errorf("sessions %v, want one with one message and one reply", list)
	}
}
