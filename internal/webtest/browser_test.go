package webtest

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// chromiumPath finds the browser: $GATEWAY_CHROMIUM, else Debian's chromium.
func chromiumPath(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("GATEWAY_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("GATEWAY_SKIP_BROWSER") == "1" {
		t.Skip("GATEWAY_SKIP_BROWSER=1: the browser test was skipped on request")
	}
	t.Fatal("chromium not found: install it (apt-get install -y chromium, as .ci/run does), " +
		"point GATEWAY_CHROMIUM at a Chrome binary, or set GATEWAY_SKIP_BROWSER=1 to skip this test explicitly")
	return ""
}

// browser starts headless chromium with the flags this machine needs.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(bctx, 90*time.Second)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	// Registered after the cancels, so it runs before them (LIFO).
	t.Cleanup(func() { screenshotOnFailure(t, bctx) })
	return ctx
}

// screenshotOnFailure saves what the page showed when t failed, as a PNG
// in $GATEWAY_WEBTEST_ARTIFACTS (default: gateway-webtest in the temporary
// directory), and logs its path.
func screenshotOnFailure(t *testing.T, bctx context.Context) {
	if !t.Failed() {
		return
	}
	dir := os.Getenv("GATEWAY_WEBTEST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "gateway-webtest")
	}
	ctx, cancel := context.WithTimeout(bctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("screenshot on failure: %v", err)
		return
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()) + ".png"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("screenshot on failure: %v", err)
		return
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Logf("screenshot on failure: %v", err)
		return
	}
	t.Logf("screenshot of the page at the failure: %s", p)
}

// apiSessions lists main's sessions through the API.
func apiSessions(t *testing.T, env *Env, token string) []map[string]any {
	t.Helper()
	req, _ := http.NewRequest("GET", env.URL+"/api/agents/main/sessions", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct{ Sessions []map[string]any }
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body.Sessions
}

// do runs steps that return nothing, failing the test with what on error.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// value runs one action and returns its value.
func value[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

const pageReady = `document.body.dataset.ready === "true"`

// TestPageChatReloadRenameDelete drives the embedded page in a real browser:
// token prompt, a streamed reply, history after a reload, rename and delete.
func TestPageChatReloadRenameDelete(t *testing.T) {
	const token = "browser-token"
	env := Start(t, Config{Token: token})
	ctx := browser(t)

	// The page asks for the token, keeps it and loads.
	do(t, ctx, "token prompt",
		chromedp.Navigate(env.URL+"/"),
		chromedp.WaitVisible("#auth"),
		chromedp.SendKeys("#token", token),
		chromedp.Click("#token-save"),
		chromedp.Poll[chromedp.Void](pageReady),
		chromedp.WaitNotVisible("#auth"),
	)

	// Send a message; count DOM updates of the reply bubble to see it stream.
	do(t, ctx, "chat",
		chromedp.Evaluate[chromedp.Void](`window.__updates = 0;
			new MutationObserver((recs) => {
			  for (const r of recs) {
			    const el = r.target.nodeType === 1 ? r.target : r.target.parentElement;
			    if (el && el.classList.contains("assistant")) window.__updates++;
			  }
			}).observe(document.getElementById("messages"), {childList: true, characterData: true, subtree: true});
			undefined`),
		chromedp.SendKeys("#input", "hello browser"),
		chromedp.Click("#send"),
	)
	reply := value(t, ctx, "streamed reply", chromedp.Poll[string](`(() => {
		const b = document.querySelector("#messages .msg.assistant");
		return b && !b.classList.contains("streaming") && b.textContent; })()`))
	if reply != "echo: hello browser" {
		t.Errorf("reply %q, want %q", reply, "echo: hello browser")
	}
	if updates := value(t, ctx, "updates", chromedp.Evaluate[int](`window.__updates`)); updates < 2 {
		t.Errorf("the reply bubble changed %d times, want it to grow delta by delta", updates)
	}
	list := apiSessions(t, env, token)
	if len(list) != 1 {
		t.Fatalf("sessions after the first message: %v", list)
	}
	sid := list[0]["sessionId"].(string)

	// Reload: the open session and its history come back (the token too).
	do(t, ctx, "reload", chromedp.Reload(), chromedp.Poll[chromedp.Void](pageReady))
	bubbles := value(t, ctx, "bubbles", chromedp.Evaluate[[]string](
		`[...document.querySelectorAll("#messages .msg")].map(e => e.className + "|" + e.textContent)`))
	want := []string{"msg user|hello browser", "msg assistant md|echo: hello browser"}
	if strings.Join(bubbles, "\n") != strings.Join(want, "\n") {
		t.Errorf("history after reload:\n%s\nwant:\n%s", strings.Join(bubbles, "\n"), strings.Join(want, "\n"))
	}
	if hash := value(t, ctx, "hash", chromedp.Evaluate[string](`location.hash`)); !strings.HasSuffix(hash, sid) {
		t.Errorf("location hash %q does not name session %s", hash, sid)
	}

	// Continue the same session after the reload.
	do(t, ctx, "second message",
		chromedp.SendKeys("#input", "again"),
		chromedp.Click("#send"),
		// The sidebar is drawn again once the reply ends: wait for that
		// before clicking in it (a click on a node replaced meanwhile fails
		// with "Could not find node with given id").
		chromedp.Poll[chromedp.Void](`document.querySelectorAll("#messages .msg.assistant").length === 2 &&
			!document.querySelector("#messages .streaming") &&
			document.getElementById("sessions").getAttribute("aria-busy") === "false"`),
	)
	if list := apiSessions(t, env, token); len(list) != 1 || list[0]["messageCount"].(float64) != 4 {
		t.Errorf("after a second message in the same session: %v", list)
	}

	// Rename from the sidebar.
	do(t, ctx, "rename",
		chromedp.Click(`#sessions li .act.rename`),
		chromedp.WaitVisible(`#sessions input.rename`),
		chromedp.SetValue(`#sessions input.rename`, "Renamed chat"),
		chromedp.SendKeys(`#sessions input.rename`, kb.Enter),
		chromedp.Poll[chromedp.Void](`(() => { const e = document.querySelector("#sessions li .title");
			return e && e.textContent === "Renamed chat" &&
				document.getElementById("sessions").getAttribute("aria-busy") === "false"; })()`),
	)
	if list := apiSessions(t, env, token); len(list) != 1 || list[0]["title"] != "Renamed chat" {
		t.Errorf("after rename: %v", list)
	}

	// Delete from the sidebar: the session is archived, not destroyed.
	do(t, ctx, "delete",
		chromedp.Click(`#sessions li .act.delete`),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll("#sessions li").length === 0 &&
			document.querySelectorAll("#messages .msg").length === 0`),
	)
	if list := apiSessions(t, env, token); len(list) != 0 {
		t.Errorf("after delete: %v", list)
	}
	archived, _ := filepath.Glob(filepath.Join(env.StateDir, "agents", "main", "sessions", sid+".jsonl.deleted.*"))
	if len(archived) != 1 {
		t.Errorf("archived transcripts %v, want %s.jsonl.deleted.*", archived, sid)
	}
}
