package webtest

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/gateway/gateway/agents/openai/openaitest"
)

// transcriptView lists what #messages shows, in order: "user|text",
// "assistant|text", "tool|name".
const transcriptView = `[...document.querySelectorAll("#messages .msg")].map(e =>
	e.classList.contains("tool") ? "tool|" + e.dataset.tool :
	(e.classList.contains("user") ? "user|" : e.classList.contains("assistant") ? "assistant|" : "other|") +
	e.textContent.replace(/Copy/g, "").trim().slice(0, 40))`

// settled is true once a reply ended and the sidebar was drawn again.
const settled = `!document.querySelector("#messages .streaming") &&
	document.getElementById("send").disabled === false &&
	document.getElementById("sessions").getAttribute("aria-busy") === "false"`

const markdownReply = "**bold** and a table:\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n" +
	"```go\nfmt.Println(1)\n```\n\n" +
	"<script>window.__pwned = 1</script><img src=\"x\" onerror=\"window.__pwned = 2\">" +
	"[link](javascript:window.__pwned=3)"

// TestChatMarkdownAndToolOrder: a reply's Markdown is rendered (bold, a
// table, a code fence with a Copy button) and its HTML is inert; tool call
// chips stand where the agent made the calls, live and after a reload.
func TestChatMarkdownAndToolOrder(t *testing.T) {
	fake := openaitest.NewServer(t)
	fake.Script(
		openaitest.Reply{Text: "Let me look.", ToolCalls: []openaitest.ToolCall{{ID: "c1", Name: "sessions_list", Arguments: `{}`}}},
		openaitest.Reply{ToolCalls: []openaitest.ToolCall{{ID: "c2", Name: "no_such_tool", Arguments: `{"q":"x"}`}}},
		openaitest.Reply{Text: markdownReply, Deltas: 5},
	)
	env := Start(t, Config{OpenAIBaseURL: fake.BaseURL()})
	ctx := browser(t)
	do(t, ctx, "chat",
		chromedp.Navigate(env.URL+"/"),
		chromedp.Poll[chromedp.Void](pageReady),
		chromedp.SendKeys("#input", "show me"),
		chromedp.Click("#send"),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll("#messages .msg").length >= 5 && `+settled),
	)
	live := value(t, ctx, "live view", chromedp.Evaluate[[]string](transcriptView))
	want := []string{
		"user|show me",
		"assistant|Let me look.",
		"tool|sessions_list",
		"tool|no_such_tool",
		"assistant|bold and a table:",
	}
	for i := range want {
		if i >= len(live) || !strings.HasPrefix(live[i], want[i]) {
			t.Fatalf("live view:\n%s\nwant (prefixes):\n%s", strings.Join(live, "\n"), strings.Join(want, "\n"))
		}
	}
	if len(live) != len(want) {
		t.Errorf("live view has %d entries, want %d:\n%s", len(live), len(want), strings.Join(live, "\n"))
	}
	checkMarkdown(t, ctx, "live")

	do(t, ctx, "reload", chromedp.Reload(), chromedp.Poll[chromedp.Void](pageReady))
	reloaded := value(t, ctx, "reloaded view", chromedp.Evaluate[[]string](transcriptView))
	if strings.Join(reloaded, "\n") != strings.Join(live, "\n") {
		t.Errorf("after a reload:\n%s\nlive:\n%s", strings.Join(reloaded, "\n"), strings.Join(live, "\n"))
	}
	checkMarkdown(t, ctx, "reloaded")
	// After a reload the chips carry their results.
	results := value(t, ctx, "tool results", chromedp.Evaluate[[]string](
		`[...document.querySelectorAll("#messages .msg.tool")].map(e => (e.querySelector("pre.result") || {}).textContent || "")`))
	if len(results) != 2 || results[0] == "" || !strings.HasPrefix(results[1], "failed:") {
		t.Errorf("tool results after reload %q: want the list's result, then the unknown tool's failure", results)
	}
}

// checkMarkdown checks the last reply's rendering.
func checkMarkdown(t *testing.T, ctx context.Context, when string) {
	t.Helper()
	got := value(t, ctx, when+" markdown", chromedp.Evaluate[map[string]any](`(() => {
		const b = [...document.querySelectorAll("#messages .msg.assistant")].pop();
		const a = b.querySelector("a");
		return {
			strong: (b.querySelector("strong") || {}).textContent || "",
			cells: [...b.querySelectorAll("table td")].map(td => td.textContent).join(","),
			code: (b.querySelector(".code pre code") || {}).textContent || "",
			copy: !!b.querySelector(".code button.copy"),
			scripts: document.querySelectorAll("#messages script").length,
			handlers: document.querySelectorAll("#messages [onerror]").length,
			href: a ? (a.getAttribute("href") || "") : "",
			pwned: window.__pwned === undefined ? 0 : window.__pwned,
		};
	})()`))
	want := map[string]any{"strong": "bold", "cells": "1,2", "code": "fmt.Println(1)\n", "copy": true,
		"scripts": float64(0), "handlers": float64(0), "href": "", "pwned": float64(0)}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s = %#v, want %#v (all: %v)", when, k, got[k], v, got)
		}
	}
}

// TestChatAfterDeleteAndNew: /delete in the chat leaves the page on a new
// chat whose next message is answered (it used to keep the deleted session
// id and get a 404); /new moves it to the new session.
func TestChatAfterDeleteAndNew(t *testing.T) {
	env := Start(t, Config{})
	ctx := browser(t)
	send := func(what, text string, n int) {
		t.Helper()
		do(t, ctx, what,
			chromedp.SendKeys("#input", text),
			chromedp.Click("#send"),
			chromedp.Poll[chromedp.Void](`document.querySelectorAll("#messages .msg.assistant, #messages .msg.error").length >= `+
				strconv.Itoa(n)+` && `+settled),
		)
	}
	do(t, ctx, "load", chromedp.Navigate(env.URL+"/"), chromedp.Poll[chromedp.Void](pageReady))
	send("first message", "one", 1)
	first := apiSessions(t, env, "")
	if len(first) != 1 {
		t.Fatalf("sessions: %v", first)
	}

	send("/new", "/new", 2)
	send("after /new", "two", 3)
	list := apiSessions(t, env, "")
	if len(list) != 1 || list[0]["sessionId"] == first[0]["sessionId"] || list[0]["messageCount"].(float64) != 2 {
		t.Fatalf("after /new and a message: %v (before: %v)", list, first)
	}
	hash := value(t, ctx, "hash", chromedp.Evaluate[string](`location.hash`))
	if !strings.HasSuffix(hash, list[0]["sessionId"].(string)) {
		t.Errorf("after /new the page is on %q, want session %s", hash, list[0]["sessionId"])
	}

	send("/delete", "/delete", 4)
	if got := apiSessions(t, env, ""); len(got) != 0 {
		t.Fatalf("after /delete: %v", got)
	}
	send("after /delete", "three", 5)
	views := value(t, ctx, "view", chromedp.Evaluate[[]string](transcriptView))
	if last := views[len(views)-1]; last != "assistant|echo: three" {
		t.Errorf("the message after /delete got %q, want its reply (view: %q)", last, views)
	}
	if errs := value(t, ctx, "errors", chromedp.Evaluate[string](`document.getElementById("status").textContent`)); strings.Contains(errs, "not found") {
		t.Errorf("status line %q", errs)
	}
	if got := apiSessions(t, env, ""); len(got) != 1 || got[0]["messageCount"].(float64) != 2 {
		t.Errorf("after /delete and a message: %v, want one new session", got)
	}
}

// TestChatFollowsResetInAnotherTab: a second tab of the same browser
// resets the conversation the first has open; the first follows it to the
// new session at once (told through localStorage), and its next message
// goes there.
func TestChatFollowsResetInAnotherTab(t *testing.T) {
	env := Start(t, Config{})
	ctx := browser(t)
	do(t, ctx, "first tab",
		chromedp.Navigate(env.URL+"/"),
		chromedp.Poll[chromedp.Void](pageReady),
		chromedp.SendKeys("#input", "one"),
		chromedp.Click("#send"),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll("#messages .msg.assistant").length === 1 && `+settled),
	)
	before := apiSessions(t, env, "")
	if len(before) != 1 {
		t.Fatalf("sessions: %v", before)
	}
	// window.open: a tab of the same browser context (same localStorage).
	opened := chromedp.WaitNewTarget(ctx, func(i *target.Info) bool { return i.Type == "page" })
	do(t, ctx, "open a second tab", chromedp.Evaluate[chromedp.Void](`window.open(location.href); undefined`))
	tab2, cancel := chromedp.NewContext(ctx, chromedp.WithTargetID(<-opened))
	defer cancel()
	do(t, tab2, "second tab resets",
		chromedp.Poll[chromedp.Void](pageReady+` && `+settled),
		chromedp.Click(`#sessions li .act.reset`),
		chromedp.Poll[chromedp.Void](`document.getElementById("status").textContent.startsWith("Started over")`),
	)
	after := apiSessions(t, env, "")
	if len(after) != 1 || after[0]["sessionId"] == before[0]["sessionId"] {
		t.Fatalf("after the reset: %v", after)
	}
	newID := after[0]["sessionId"].(string)
	// The first tab is in the background: requestAnimationFrame, Poll's
	// default, does not run there.
	every := chromedp.WithPollingInterval(50 * time.Millisecond)
	do(t, ctx, "first tab follows",
		chromedp.Poll[chromedp.Void](`location.hash.endsWith(`+strconv.Quote(newID)+`) && `+settled, every),
		chromedp.SendKeys("#input", "two"),
		chromedp.Click("#send"),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll("#messages .msg.assistant").length === 1 && `+
			`document.querySelector("#messages .msg.assistant").textContent === "echo: two" && `+settled, every),
	)
	if got := apiSessions(t, env, ""); len(got) != 1 || got[0]["sessionId"] != newID || got[0]["messageCount"].(float64) != 2 {
		t.Errorf("after a message in the first tab: %v, want it in %s", got, newID)
	}
}

// TestChatFollowsResetElsewhere: the open conversation is reset where the
// page cannot hear of it (another browser, the API); the next message
// finds its session gone (404), follows the chat to its new session and is
// answered there.
func TestChatFollowsResetElsewhere(t *testing.T) {
	env := Start(t, Config{})
	ctx := browser(t)
	do(t, ctx, "first message",
		chromedp.Navigate(env.URL+"/"),
		chromedp.Poll[chromedp.Void](pageReady),
		chromedp.SendKeys("#input", "one"),
		chromedp.Click("#send"),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll("#messages .msg.assistant").length === 1 && `+settled),
	)
	before := apiSessions(t, env, "")
	if len(before) != 1 {
		t.Fatalf("sessions: %v", before)
	}
	res, err := http.Post(env.URL+"/api/agents/main/sessions/"+before[0]["sessionId"].(string)+"/reset", "application/json", nil)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("reset through the API: %v %v", res, err)
	}
	res.Body.Close()
	after := apiSessions(t, env, "")
	newID := after[0]["sessionId"].(string)
	do(t, ctx, "message after the reset",
		chromedp.SendKeys("#input", "two"),
		chromedp.Click("#send"),
		chromedp.Poll[chromedp.Void](`[...document.querySelectorAll("#messages .msg.assistant")].some(e => e.textContent === "echo: two") && `+settled),
	)
	if got := apiSessions(t, env, ""); len(got) != 1 || got[0]["sessionId"] != newID || got[0]["messageCount"].(float64) != 2 {
		t.Errorf("after a message: %v, want it in %s", got, newID)
	}
	if hash := value(t, ctx, "hash", chromedp.Evaluate[string](`location.hash`)); !strings.HasSuffix(hash, newID) {
		t.Errorf("the page is on %q, want %s", hash, newID)
	}
}
