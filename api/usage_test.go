package api_test

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/internal/webtest"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
	"github.com/gateway/gateway/sessions/sessionstest"
	"github.com/gateway/gateway/sessions/usagereport"
)

// recordLedger appends rows to the running daemon's files ledger from a
// second (passive) handle on its state dir, as `gateway usage rebuild`
// would.
func recordLedger(t *testing.T, env *webtest.Env, rows ...sessions.UsageRow) {
	t.Helper()
	mgr, err := filestore.Open(filestore.Options{StateDir: env.StateDir, Passive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close()
	if err := mgr.Backend().Usage().Record(context.Background(), rows...); err != nil {
		t.Fatal(err)
	}
}

// usageReport GETs path and decodes the report.
func (c *client) usageReport(path string) (int, usagereport.Report, string) {
	c.t.Helper()
	res := c.raw("GET", path, nil)
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	var rep usagereport.Report
	if res.StatusCode == http.StatusOK {
		if err := json.Unmarshal(data, &rep); err != nil {
			c.t.Fatalf("GET %s: %v: %s", path, err, data)
		}
	}
	return res.StatusCode, rep, string(data)
}

func TestUsageAPI(t *testing.T) {
	const token = "usage-token"
	env := webtest.Start(t, webtest.Config{Token: token})
	c := newClient(t, env, token)
	recordLedger(t, env, sessionstest.UsageFixture()...)

	if code, _, _ := newClient(t, env, "").usageReport("/api/usage"); code != http.StatusUnauthorized {
		t.Errorf("without the token: %d, want 401", code)
	}
	if code, _, _ := newClient(t, env, "wrong").usageReport("/api/usage?by=day"); code != http.StatusUnauthorized {
		t.Errorf("with a wrong token: %d, want 401", code)
	}

	code, rep, body := c.usageReport("/api/usage?by=day&agent=main")
	if code != http.StatusOK {
		t.Fatalf("by day: %d %s", code, body)
	}
	// sessionstest.UsageFixture, agent main: 6675, 29475 and 45 µ$ a day.
	days := []string{}
	for _, b := range rep.Buckets {
		days = append(days, b.Key)
	}
	if rep.By != "day" || rep.Agent != "main" || strings.Join(days, ",") != "2026-10-31,2026-11-01,2026-11-02" ||
		math.Abs(rep.Buckets[1].Cost-0.029475) > 1e-9 || rep.Total.Turns != 4 || math.Abs(rep.Total.Cost-0.036195) > 1e-9 {
		t.Errorf("by day of main: %+v", rep)
	}
	code, rep, body = c.usageReport("/api/usage?by=sender&since=2026-11-01")
	if code != http.StatusOK || len(rep.Buckets) != 3 || rep.Buckets[1].Key != "telegram:300" || rep.Buckets[1].Label != "Cy" ||
		rep.Since == nil || rep.Total.Turns != 3 {
		t.Errorf("by sender since 1 Nov: %d %+v %s", code, rep, body)
	}

	for _, bad := range []struct{ query, want string }{
		{"by=week", `by \"week\"`},
		{"since=soon", "since"},
		{"agent=..%2Fx", "agent"},
		{"limit=5", "unknown parameter limit"},
	} {
		code, _, body := c.usageReport("/api/usage?" + bad.query)
		if code != http.StatusBadRequest || !strings.Contains(body, bad.want) {
			t.Errorf("?%s: %d %s, want 400 naming %s", bad.query, code, body, bad.want)
		}
	}
	if code, _ := c.do("POST", "/api/usage", map[string]any{}); code != http.StatusMethodNotAllowed {
		t.Errorf("POST /api/usage: %d, want 405", code)
	}
}

// TestUsageAPIAfterAChat: a chat turn through the daemon adds a ledger
// row (right after its reply) the API reports under its session.
func TestUsageAPIAfterAChat(t *testing.T) {
	env := webtest.Start(t, webtest.Config{})
	c := newClient(t, env, "")
	r := c.chat("main", "count my tokens", "")
	// The row is written once the reply is out: wait for it.
	var (
		code int
		rep  usagereport.Report
		body string
	)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		code, rep, body = c.usageReport("/api/usage?by=model")
		if code != http.StatusOK || rep.Total.Turns > 0 || time.Now().After(deadline) {
			break
		}
	}
	if code != http.StatusOK || len(rep.Buckets) != 1 || rep.Buckets[0].Key != "local/echo" || rep.Buckets[0].Turns != 1 ||
		rep.Buckets[0].Input == 0 || rep.Buckets[0].Output == 0 {
		t.Fatalf("after one chat turn (session %s): %d %+v %s", r.SessionID, code, rep, body)
	}
	if _, rep, _ := c.usageReport("/api/usage?by=session"); len(rep.Buckets) != 1 || !strings.HasPrefix(rep.Buckets[0].Key, "agent:main:web:") {
		t.Errorf("by session: %+v", rep)
	}
}
