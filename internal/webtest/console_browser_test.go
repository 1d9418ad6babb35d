package webtest

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// accountState is the state the console shows for telegram:default.
const accountState = `(document.querySelector('#c-channels tr[data-account="telegram:default"]') || {dataset: {}}).dataset.state`

// TestConsoleStatusLive: the console's status, refreshed every second,
// shows the Telegram account failing while the fake Bot API is down and
// connected again once it is back, without a reload.
func TestConsoleStatusLive(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	env := Start(t, Config{TelegramAPIRoot: tg.URL, TelegramToken: tg.Token()})
	ctx := browser(t)
	long := chromedp.WithPollingTimeout(60 * time.Second)
	do(t, ctx, "connected",
		chromedp.Navigate(env.URL+"/console.html?refresh=1"),
		chromedp.Poll[chromedp.Void](pageReady+` && `+accountState+` === "connected"`, long),
	)
	tg.Stop()
	do(t, ctx, "failing", chromedp.Poll[chromedp.Void](accountState+` === "failing"`, long))
	overall := value(t, ctx, "overall", chromedp.Evaluate[string](`document.getElementById("c-overall").textContent`))
	problems := value(t, ctx, "problems", chromedp.Evaluate[string](`document.getElementById("c-problems").textContent`))
	if overall != "failing" || !strings.Contains(problems, "telegram") {
		t.Errorf("while Telegram is down: overall %q, problems %q", overall, problems)
	}
	if err := tg.Restart(); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, "connected again", chromedp.Poll[chromedp.Void](accountState+` === "connected"`, long))
	if o := value(t, ctx, "overall", chromedp.Evaluate[string](`document.getElementById("c-overall").textContent`)); o != "ok" {
		t.Errorf("overall %q after Telegram came back", o)
	}
}

// TestConsoleDeadLetterResubmit: a reply Telegram refused until the
// dispatcher gave up is listed as a dead letter; Resubmit in the console
// sends it once.
func TestConsoleDeadLetterResubmit(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	env := Start(t, Config{TelegramAPIRoot: tg.URL, TelegramToken: tg.Token()})
	// A refusal (403) is given up at once: the chunk is asked once.
	tg.FailNext("sendMessage", telegramtest.Failure{Code: 403})
	tg.DM(111, "nobody hears this")
	ctx := browser(t)
	long := chromedp.WithPollingTimeout(60 * time.Second)
	const letter = `document.querySelector('#c-dead tr[data-state="failed"]')`
	do(t, ctx, "dead letter listed",
		chromedp.Navigate(env.URL+"/console.html?refresh=1"),
		chromedp.Poll[chromedp.Void](`!!`+letter+` && `+letter+`.textContent.includes("echo: nobody hears this")`, long),
	)
	sentTo111 := func() int {
		n := 0
		for _, s := range tg.Sent() {
			if s.ChatID == 111 && s.Text == "echo: nobody hears this" {
				n++
			}
		}
		return n
	}
	if n := sentTo111(); n != 0 {
		t.Fatalf("the refused reply was sent %d times before the resubmit", n)
	}
	do(t, ctx, "resubmit",
		chromedp.Click(`#c-dead tr[data-state="failed"] button.resubmit`),
		chromedp.Poll[chromedp.Void](`document.getElementById("c-status").textContent.startsWith("Resubmitted") && !`+letter, long),
	)
	wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := tg.WaitSent(wctx, 1); err != nil {
		t.Fatalf("nothing sent after the resubmit: %v", err)
	}
	// Nothing is left to send once the status shows no reply in flight.
	do(t, ctx, "delivered",
		chromedp.Poll[chromedp.Void](`document.getElementById("c-delivery").textContent.includes("replies being sent: 0")`, long))
	if n := sentTo111(); n != 1 {
		t.Errorf("after a resubmit the reply was sent %d times, want once", n)
	}
}

// TestConsoleSessionsOfEveryChannel: a Telegram DM and a web chat each
// make a session; the console lists both, filters by channel, opens the
// Telegram transcript read-only, resets it (a new session id for the same
// key) and archives the web one.
func TestConsoleSessionsOfEveryChannel(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	env := Start(t, Config{TelegramAPIRoot: tg.URL, TelegramToken: tg.Token()})
	tg.DM(111, "hi from **telegram**")
	wctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := tg.WaitSent(wctx, 1); err != nil {
		t.Fatalf("no reply in Telegram: %v", err)
	}
	res, err := http.Post(env.URL+"/api/agents/main/chat", "application/json", strings.NewReader(`{"message":"hi from web"}`))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body) // the whole stream: the turn is done
	res.Body.Close()
	before := apiSessions(t, env, "")
	if len(before) != 2 {
		t.Fatalf("sessions: %v", before)
	}
	var tgID, webID string
	for _, s := range before {
		switch s["channel"] {
		case "telegram":
			tgID = s["sessionId"].(string)
		case "web":
			webID = s["sessionId"].(string)
		}
	}
	ctx := browser(t)
	rows := `[...document.querySelectorAll("#c-sessions tbody tr[data-session-id]")].map(r => r.dataset.channel)`
	do(t, ctx, "listed",
		chromedp.Navigate(env.URL+"/console.html"),
		chromedp.Poll[chromedp.Void](`document.body.dataset.sessions === "ready" && document.querySelectorAll("#c-sessions tbody tr[data-session-id]").length === 2`),
	)
	do(t, ctx, "filter telegram",
		chromedp.SetValue("#c-sess-channel", "telegram"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("c-sess-channel").dispatchEvent(new Event("change")); undefined`),
	)
	if got := value(t, ctx, "rows", chromedp.Evaluate[[]string](rows)); strings.Join(got, ",") != "telegram" {
		t.Errorf("filtered by telegram: %q", got)
	}
	do(t, ctx, "open",
		chromedp.Click(`#c-sessions tr[data-channel="telegram"] button.open`),
		chromedp.Poll[chromedp.Void](`!document.getElementById("c-transcript").hidden`),
	)
	tr := value(t, ctx, "transcript", chromedp.Evaluate[[]string](
		`[...document.querySelectorAll("#c-tr-messages .msg")].map(e => e.className + "|" + e.textContent)`))
	if strings.Join(tr, "\n") != "msg user|hi from **telegram**\nmsg assistant md|echo: hi from telegram" {
		t.Errorf("transcript:\n%s", strings.Join(tr, "\n"))
	}
	if n := value(t, ctx, "inputs", chromedp.Evaluate[int](`document.querySelectorAll("#c-transcript textarea, #c-transcript input").length`)); n != 0 {
		t.Errorf("the transcript view has %d inputs, want none (read-only)", n)
	}
	do(t, ctx, "reset",
		chromedp.Evaluate[chromedp.Void](`window.confirm = () => true; undefined`),
		chromedp.Click(`#c-sessions tr[data-channel="telegram"] button.reset`),
		chromedp.Poll[chromedp.Void](`document.getElementById("c-status").textContent.startsWith("Started over") && document.getElementById("c-transcript").hidden`),
	)
	do(t, ctx, "archive web",
		chromedp.SetValue("#c-sess-channel", "web"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("c-sess-channel").dispatchEvent(new Event("change")); undefined`),
		chromedp.Click(`#c-sessions tr[data-channel="web"] button.archive`),
		chromedp.Poll[chromedp.Void](`document.getElementById("c-status").textContent.startsWith("Archived") && !document.querySelector('#c-sessions tr[data-channel="web"]')`),
	)
	after := apiSessions(t, env, "")
	if len(after) != 1 || after[0]["channel"] != "telegram" || after[0]["sessionId"] == tgID || after[0]["sessionId"] == webID {
		t.Errorf("after reset and archive: %v (telegram was %s, web %s)", after, tgID, webID)
	}
}

// TestConsoleConfigRedacted: the console shows the effective config with
// the API token and the Telegram bot token redacted.
func TestConsoleConfigRedacted(t *testing.T) {
	const token = "console-secret-token"
	tg := telegramtest.Start(t, telegramtest.Options{})
	env := Start(t, Config{Token: token, TelegramAPIRoot: tg.URL, TelegramToken: tg.Token()})
	ctx := browser(t)
	do(t, ctx, "token", chromedp.Navigate(env.URL+"/console.html"),
		chromedp.WaitVisible("#auth"),
		chromedp.SendKeys("#token", token),
		chromedp.Click("#token-save"),
		chromedp.Poll[chromedp.Void](pageReady),
	)
	// The summary is clicked as an element, not at its coordinates: the
	// sections above it fill in as their requests return, and on a loaded
	// machine (CI run 51) the layout moved between the coordinates and the
	// mouse event, which then missed it and the details stayed closed.
	do(t, ctx, "open the config",
		chromedp.WaitVisible("#c-config-box summary"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector("#c-config-box summary").click()`),
		chromedp.Poll[chromedp.Void](`document.getElementById("c-config-box").open`),
	)
	text := value(t, ctx, "config text", chromedp.Poll[string](`document.getElementById("c-config").textContent`))
	for _, secret := range []string{token, tg.Token()} {
		if strings.Contains(text, secret) {
			t.Errorf("the config view shows a secret %q", secret)
		}
	}
	for _, want := range []string{`"token": "REDACTED"`, `"apiRoot": "` + tg.URL + `"`, `"local/echo"`} {
		if !strings.Contains(text, want) {
			t.Errorf("the config view lacks %s:\n%s", want, text)
		}
	}
}

// TestConsolePairingApproveTellsTheSender: an unknown Telegram sender gets
// a pairing code; Approve in the console admits them and tells them in
// their chat; their next message is answered; Revoke withdraws them.
func TestConsolePairingApproveTellsTheSender(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	env := Start(t, Config{TelegramAPIRoot: tg.URL, TelegramToken: tg.Token(), TelegramDMPolicy: "pairing"})
	wctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tg.DM(222, "let me in")
	sent, err := tg.WaitSent(wctx, 1)
	if err != nil {
		t.Fatalf("no pairing code sent: %v", err)
	}
	ctx := browser(t)
	long := chromedp.WithPollingTimeout(60 * time.Second)
	do(t, ctx, "pending",
		chromedp.Navigate(env.URL+"/console.html?refresh=1"),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll("#c-pending tr[data-code]").length === 1`, long),
	)
	code := value(t, ctx, "code", chromedp.Evaluate[string](`document.querySelector("#c-pending tr[data-code]").dataset.code`))
	if !strings.Contains(sent[0].Text, code) {
		t.Errorf("the sender was given %q, the console shows code %s", sent[0].Text, code)
	}
	do(t, ctx, "approve",
		chromedp.Click(`#c-pending tr[data-code] button.approve`),
		chromedp.Poll[chromedp.Void](`document.getElementById("c-status").textContent.includes("they were told") &&
			!!document.querySelector('#c-approved tr[data-sender="telegram:default:222"]')`, long),
	)
	all, err := tg.WaitSent(wctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if n := all[1]; n.ChatID != 222 || !strings.Contains(n.Text, "approved") {
		t.Errorf("after the approval the sender got %+v, want the notice in chat 222", n)
	}
	tg.DM(222, "hello now")
	all, err = tg.WaitSent(wctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	if r := all[2]; r.ChatID != 222 || r.Text != "echo: hello now" {
		t.Errorf("the approved sender's message got %+v", r)
	}
	do(t, ctx, "revoke",
		chromedp.Evaluate[chromedp.Void](`window.confirm = () => true; undefined`),
		chromedp.Click(`#c-approved tr[data-sender="telegram:default:222"] button.revoke`),
		chromedp.Poll[chromedp.Void](`document.getElementById("c-status").textContent.startsWith("Revoked") &&
			!document.querySelector('#c-approved tr[data-sender]')`, long),
	)
}
