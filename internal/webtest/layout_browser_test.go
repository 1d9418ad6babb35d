package webtest

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// overflow reports what is wider than the 390 px screen, from layout
// metrics: the document and every scrolling box of the chat (a box that
// scrolls sideways inside itself, like a code block, is fine; the page
// and the message list must not).
const overflow = `(() => {
	const bad = [];
	const de = document.documentElement;
	if (de.scrollWidth > de.clientWidth) bad.push("document " + de.scrollWidth + ">" + de.clientWidth);
	for (const id of ["messages", "layout", "session-info", "composer", "usage", "console"]) {
		const e = document.getElementById(id);
		if (e && e.scrollWidth > e.clientWidth) bad.push(id + " " + e.scrollWidth + ">" + e.clientWidth);
	}
	for (const e of document.querySelectorAll("header, header *")) {
		const r = e.getBoundingClientRect();
		if (r.right > de.clientWidth + 0.5) bad.push(e.tagName + "#" + e.id + " right " + r.right);
	}
	return bad;
})()`

// sidebarShown says whether any of the sidebar is on screen.
const sidebarShown = `(() => {
	const s = document.getElementById("sidebar");
	const r = s.getBoundingClientRect();
	return getComputedStyle(s).visibility !== "hidden" && r.right > 0 && r.width > 0;
})()`

// wideReply is a message whose echo is wide Markdown: a long code line, a
// table of many columns and a long unbroken word.
const wideReply = "wide:\n```\n" + "x := 1 // " + "0123456789" + "0123456789012345678901234567890123456789012345678901234567890123456789\n```\n\n" +
	"| a | b | c | d | e | f | g | h | i | j | k | l |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n" +
	"| alpha | bravo | charlie | delta | echo | foxtrot | golf | hotel | india | juliet | kilo | lima |\n\n" +
	"Supercalifragilisticexpialidocious-supercalifragilisticexpialidocious-supercalifragilistic"

// TestPageAt390Pixels: on a 390 px wide screen the sidebar is a drawer
// (closed at first, opened and closed from the keyboard), nothing is wider
// than the screen, and the token dialog says what the token is for.
func TestPageAt390Pixels(t *testing.T) {
	env := Start(t, Config{})
	ctx := browser(t)
	do(t, ctx, "load narrow",
		chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(env.URL+"/"),
		chromedp.Poll[chromedp.Void](pageReady),
	)
	if value(t, ctx, "sidebar", chromedp.Evaluate[bool](sidebarShown)) {
		t.Errorf("at 390 px the sidebar is shown before it is asked for")
	}
	do(t, ctx, "wide reply",
		chromedp.SetValue("#input", wideReply),
		chromedp.Click("#send"),
		chromedp.Poll[chromedp.Void](`!!document.querySelector("#messages .msg.assistant table") && `+settled),
	)
	if bad := value(t, ctx, "overflow", chromedp.Evaluate[[]string](overflow)); len(bad) > 0 {
		t.Errorf("wider than the screen at 390 px: %s", strings.Join(bad, "; "))
	}

	// The drawer from the keyboard: Enter on the button opens it with the
	// focus inside, Escape closes it and gives the focus back.
	do(t, ctx, "open the drawer",
		chromedp.Focus("#toggle-sidebar"),
		chromedp.KeyEvent(kb.Enter),
		chromedp.Poll[chromedp.Void](sidebarShown+` && document.getElementById("sidebar").contains(document.activeElement)`),
	)
	if bad := value(t, ctx, "overflow with the drawer", chromedp.Evaluate[[]string](overflow)); len(bad) > 0 {
		t.Errorf("wider than the screen with the drawer open: %s", strings.Join(bad, "; "))
	}
	do(t, ctx, "close the drawer",
		chromedp.KeyEvent(kb.Escape),
		chromedp.Poll[chromedp.Void](`!`+sidebarShown+` && document.activeElement.id === "toggle-sidebar"`),
	)

	// The token dialog explains itself, takes the focus, and Escape closes it.
	do(t, ctx, "token dialog",
		chromedp.Click("#change-token"),
		chromedp.Poll[chromedp.Void](`!document.getElementById("auth").hidden && document.activeElement.id === "token"`),
	)
	what := value(t, ctx, "token text", chromedp.Evaluate[string](`document.getElementById("auth-what").textContent`))
	for _, want := range []string{"every request", "http.token", "this browser only"} {
		if !strings.Contains(what, want) {
			t.Errorf("the token dialog does not say %q: %q", want, what)
		}
	}
	do(t, ctx, "close the dialog",
		chromedp.KeyEvent(kb.Escape),
		chromedp.Poll[chromedp.Void](`document.getElementById("auth").hidden`),
	)

	// The usage page at 390 px: its wide table scrolls inside its box.
	do(t, ctx, "usage narrow",
		chromedp.Navigate(env.URL+"/usage.html"),
		chromedp.Poll[chromedp.Void](pageReady),
	)
	if bad := value(t, ctx, "usage overflow", chromedp.Evaluate[[]string](overflow)); len(bad) > 0 {
		t.Errorf("usage page wider than the screen at 390 px: %s", strings.Join(bad, "; "))
	}
	do(t, ctx, "console narrow",
		chromedp.Navigate(env.URL+"/console.html"),
		chromedp.Poll[chromedp.Void](pageReady),
	)
	if bad := value(t, ctx, "console overflow", chromedp.Evaluate[[]string](overflow)); len(bad) > 0 {
		t.Errorf("console wider than the screen at 390 px: %s", strings.Join(bad, "; "))
	}
}
