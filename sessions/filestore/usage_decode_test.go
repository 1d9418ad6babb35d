package filestore

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
	"github.com/google/go-cmp/cmp"
)

// TestUsageDecoderMatchesJSON: the fast decoder reads every line the
// ledger writes, and lines it does not recognise (escapes, other layouts),
// as encoding/json does.
func TestUsageDecoderMatchesJSON(t *testing.T) {
	at := time.Date(2026, 11, 1, 12, 30, 45, 123e6, time.UTC)
	rows := []sessions.UsageRow{
		{At: at, AgentID: "main", SessionKey: "agent:main:main", SessionID: "s1", EntryID: "e1", Provider: "openai", Model: "gpt-4.1",
			Input: 1200, Output: 300, CacheRead: 4000, CacheWrite: 7, Cost: 0.0054},
		{At: at, AgentID: "ops", SessionKey: "agent:ops:telegram:group:-100", SessionID: "s2", Channel: "telegram", Room: "telegram:-100:5",
			SenderID: "42", SenderName: `Zoë "the quote" \ back`, Provider: "p", Model: "m", Cost: 1e-9},
		{At: at, AgentID: "a", SessionID: "s3", SenderName: "tab\there ✓", Cost: math.MaxFloat64 / 2},
	}
	for i, r := range rows {
		line, err := encodeUsageLine(r)
		if err != nil {
			t.Fatal(err)
		}
		var fast, slow sessions.UsageRow
		if err := newUsageDecoder().decode(line, &fast); err != nil {
			t.Fatalf("row %d: decode %s: %v", i, line, err)
		}
		if err := json.Unmarshal(line, &slow); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(slow, fast); d != "" {
			t.Errorf("row %d (%s): fast decoder differs from encoding/json (-json +fast):\n%s", i, line, d)
		}
		if d := cmp.Diff(r, fast); d != "" {
			t.Errorf("row %d: round trip (-written +read):\n%s", i, d)
		}
	}
	for _, line := range []string{
		`{"at":"2026-11-01T00:00:00.000Z","agent":"main","extra":{"nested":[1,2]},"input":5}`,
		`{ "input" : 5 , "agent" : "x" }`,
		`{"input":1e3}`,
	} {
		var fast, slow sessions.UsageRow
		errFast := newUsageDecoder().decode([]byte(line), &fast)
		errSlow := json.Unmarshal([]byte(line), &slow)
		if (errFast == nil) != (errSlow == nil) || !cmp.Equal(fast, slow) {
			t.Errorf("%s: fast %+v (%v), json %+v (%v)", line, fast, errFast, slow, errSlow)
		}
	}
	var r sessions.UsageRow
	if err := newUsageDecoder().decode([]byte(`{"at":`), &r); err == nil {
		t.Error("a torn line decoded")
	}
}
