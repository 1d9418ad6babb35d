package webtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
	"github.com/gateway/gateway/sessions/sessionstest"
)

// TestUsagePageChartAndTable drives usage.html in a real browser: the
// token prompt, a bar per UTC day (days without turns drawn empty), the
// table grouped as chosen with its total.
func TestUsagePageChartAndTable(t *testing.T) {
	const token = "usage-token"
	env := Start(t, Config{Token: token})
	mgr, err := filestore.Open(filestore.Options{StateDir: env.StateDir, Passive: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Backend().Usage().Record(context.Background(), sessionstest.UsageFixture()...); err != nil {
		t.Fatal(err)
	}
	if err := mgr.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := browser(t)
	do(t, ctx, "token prompt",
		chromedp.Navigate(env.URL+"/usage.html"),
		chromedp.WaitVisible("#auth"),
		chromedp.SendKeys("#token", token),
		chromedp.Click("#token-save"),
		chromedp.Poll[chromedp.Void](pageReady),
	)
	// The fixture is of 2026-10-31 to 2026-11-02: show everything.
	do(t, ctx, "all time",
		chromedp.Evaluate[chromedp.Void](`document.getElementById("u-since").value = ""; undefined`),
		chromedp.Click(`#filters button[type=submit]`),
		chromedp.Poll[chromedp.Void](pageReady+` && document.querySelectorAll("#u-chart rect.bar").length > 0`),
	)
	bars := value(t, ctx, "bars", chromedp.Evaluate[[]string](
		`[...document.querySelectorAll("#u-chart rect.bar")].map(r => r.dataset.day + "|" + r.querySelector("title").textContent)`))
	want := []string{
		"2026-10-31|2026-10-31: $0.0067, 4,700 tokens, 2 turns",
		"2026-11-01|2026-11-01: $0.0595, 17,500 tokens, 2 turns",
		"2026-11-02|2026-11-02: $0.0000, 150 tokens, 1 turns",
	}
	if strings.Join(bars, "\n") != strings.Join(want, "\n") {
		t.Errorf("bars:\n%s\nwant:\n%s", strings.Join(bars, "\n"), strings.Join(want, "\n"))
	}
	if title := value(t, ctx, "chart title", chromedp.Evaluate[string](`document.getElementById("u-chart-title").textContent`)); title != "Cost per day (USD, UTC)" {
		t.Errorf("chart title %q with prices", title)
	}
	heights := value(t, ctx, "heights", chromedp.Evaluate[[]float64](
		`[...document.querySelectorAll("#u-chart rect.bar")].map(r => Number(r.getAttribute("height")))`))
	if len(heights) != 3 || !(heights[1] > heights[0] && heights[0] > heights[2]) {
		t.Errorf("bar heights %v: want the costliest day tallest", heights)
	}
	rows := value(t, ctx, "table", chromedp.Evaluate[[]string](
		`[...document.querySelectorAll("#u-table tbody tr, #u-table tfoot tr")].map(r => [...r.cells].map(c => c.textContent).join("|"))`))
	wantRows := []string{
		"–||1|10,000|0|0|0|0.0300",
		"telegram:300|Cy|1|4,000|1,000|2,000|500|0.0295",
		"telegram:100|Ann|3|3,100|750|1,000|0|0.0067",
		"Total||5|17,100|1,750|3,000|500|0.0662",
	}
	if strings.Join(rows, "\n") != strings.Join(wantRows, "\n") {
		t.Errorf("table by sender:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(wantRows, "\n"))
	}
	do(t, ctx, "by model, agent main",
		chromedp.Evaluate[chromedp.Void](`document.getElementById("u-by").value = "model";
			document.getElementById("u-agent").value = "main"; undefined`),
		chromedp.Click(`#filters button[type=submit]`),
		chromedp.Poll[chromedp.Void](pageReady+` && document.querySelector("#u-key").textContent === "Model"`),
	)
	rows = value(t, ctx, "table by model", chromedp.Evaluate[[]string](
		`[...document.querySelectorAll("#u-table tbody tr")].map(r => r.cells[0].textContent + "|" + r.cells[7].textContent)`))
	if strings.Join(rows, ",") != "openai/gpt-big|0.0355,openai/gpt-small|0.0007" {
		t.Errorf("table by model of main: %q", rows)
	}
	do(t, ctx, "by day",
		chromedp.Evaluate[chromedp.Void](`document.getElementById("u-by").value = "day";
			document.getElementById("u-agent").value = ""; undefined`),
		chromedp.Click(`#filters button[type=submit]`),
		chromedp.Poll[chromedp.Void](pageReady+` && document.querySelector("#u-key").textContent === "Day"`),
	)
	rows = value(t, ctx, "table by day", chromedp.Evaluate[[]string](
		`[...document.querySelectorAll("#u-table thead th:nth-child(2), #u-table tbody tr td:nth-child(2)")].map(c => c.textContent)`))
	if strings.Join(rows, ",") != "Weekday,Saturday,Sunday,Monday" {
		t.Errorf("names by day: %q", rows)
	}
}

// TestUsagePageTokensWhenUnpriced: a day of turns without prices is drawn
// as tokens, titled so, as one bar of a bar's width (not the whole chart).
func TestUsagePageTokensWhenUnpriced(t *testing.T) {
	env := Start(t, Config{})
	mgr, err := filestore.Open(filestore.Options{StateDir: env.StateDir, Passive: true})
	if err != nil {
		t.Fatal(err)
	}
	row := sessions.UsageRow{At: time.Now().UTC().Truncate(time.Millisecond), AgentID: "main", SessionKey: "agent:main:main", SessionID: "s1", EntryID: "e1",
		Provider: "local", Model: "echo", Input: 1200, Output: 300}
	if err := mgr.Backend().Usage().Record(context.Background(), row); err != nil {
		t.Fatal(err)
	}
	if err := mgr.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := browser(t)
	do(t, ctx, "load",
		chromedp.Navigate(env.URL+"/usage.html"),
		chromedp.Poll[chromedp.Void](pageReady+` && document.querySelectorAll("#u-chart rect.bar").length > 0`),
	)
	got := value(t, ctx, "chart", chromedp.Evaluate[[]string](`[
		document.getElementById("u-chart-title").textContent,
		document.querySelector("#u-chart rect.bar title").textContent,
		String(document.querySelectorAll("#u-chart rect.bar").length),
		String(Number(document.querySelector("#u-chart rect.bar").getAttribute("width")) <= 48),
		[...document.querySelectorAll("#u-chart text")].map(e => e.textContent).join("|")]`))
	day := row.At.Format("2006-01-02")
	want := []string{"Tokens per day (UTC; no prices configured)", day + ": $0.0000, 1,500 tokens, 1 turns", "1", "true",
		"max 1,500 tokens a day (no prices configured)"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("chart:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
