package sessionstest

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/usagereport"
)

// TestUsageRebuild runs usagereport.Rebuild against the backends open
// returns: turns are read from transcripts (a tool-call turn summed), a
// turn the ledger holds is not added again, a turn without a stored cost
// is priced, a second run adds nothing, Before leaves recent turns alone.
func TestUsageRebuild(t *testing.T, open BackendOpener) {
	b := open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	key, err := routing.PeerKey("main", "telegram", "", routing.Direct, "42")
	if err != nil {
		t.Fatal(err)
	}
	st, err := b.Store("main")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)
	e, _, err := st.Begin(ctx, key, sessions.Origin{Channel: "telegram", ChatType: "direct", To: "42", From: "42", Name: "Dee", At: t0})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := st.TranscriptOf(e)
	if err != nil {
		t.Fatal(err)
	}
	at := func(d time.Duration) int64 { return t0.Add(d).UnixMilli() }
	assistant := func(d time.Duration, u sessions.Usage, calls bool) sessions.Message {
		m := sessions.Message{Role: sessions.RoleAssistant, Provider: "openai", Model: "gpt-x", Usage: &u, Timestamp: at(d),
			Content: []sessions.Content{{Type: sessions.BlockText, Text: "ok"}}}
		if calls {
			m.Content = []sessions.Content{{Type: sessions.BlockToolCall, ID: "c1", Name: "sessions_list", Arguments: []byte(`{}`)}}
		}
		return m
	}
	user := func(d time.Duration) sessions.Message { return sessions.UserText("hi", t0.Add(d)) }
	msgs := []sessions.Message{
		user(0),
		assistant(time.Second, sessions.Usage{Input: 1000, Output: 100}, true),
		{Role: sessions.RoleToolResult, ToolCallID: "c1", ToolName: "sessions_list", Content: []sessions.Content{{Type: sessions.BlockText, Text: "[]"}}, Timestamp: at(2 * time.Second)},
		assistant(3*time.Second, sessions.Usage{Input: 500, Output: 50, CacheRead: 200}, false),
		user(time.Minute),
		assistant(time.Minute+time.Second, sessions.Usage{Input: 10, Output: 5, Cost: sessions.Cost{Total: 0.002}}, false),
		user(time.Hour),
		assistant(time.Hour+time.Second, sessions.Usage{Input: 7, Output: 7, Cost: sessions.Cost{Total: 0.5}}, false),
	}
	if _, err := tr.Append(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	ledger := b.Usage()
	live := sessions.UsageRow{At: time.UnixMilli(at(time.Minute + time.Second)), AgentID: "main", SessionKey: key.String(),
		SessionID: e.SessionID, EntryID: "live", Channel: "telegram", Room: "telegram:42", SenderID: "42", SenderName: "Dee",
		Provider: "openai", Model: "gpt-x", Input: 10, Output: 5, Cost: 0.002}
	if err := ledger.Record(ctx, live); err != nil {
		t.Fatal(err)
	}
	priced := 0
	opts := usagereport.RebuildOptions{Before: t0.Add(30 * time.Minute), Price: func(provider, model string, u sessions.Usage) float64 {
		priced++
		if provider != "openai" || model != "gpt-x" || u.Input != 1500 || u.Output != 150 || u.CacheRead != 200 {
			t.Errorf("Price(%s, %s, %+v): want the first turn's sum", provider, model, u)
		}
		return 1
	}}
	rep, err := usagereport.Rebuild(ctx, b, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep != (usagereport.RebuildReport{Sessions: 1, Turns: 3, Added: 1, Priced: 1}) || priced != 1 {
		t.Errorf("first rebuild: %+v (priced %d), want 1 session, 3 turns, 1 added and priced", rep, priced)
	}
	got, err := ledger.Query(ctx, sessions.UsageFilter{By: sessions.UsageBySender})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Key != "telegram:42" || got[0].Label != "Dee" || got[0].Turns != 2 || got[0].Input != 1510 ||
		got[0].Output != 155 || got[0].CacheRead != 200 || math.Abs(got[0].Cost-1.002) > 1e-9 {
		t.Errorf("after the rebuild: %+v, want the live turn and the rebuilt one of sender telegram:42 (Dee)", got)
	}
	rep, err = usagereport.Rebuild(ctx, b, usagereport.RebuildOptions{AgentID: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Added != 1 || rep.Turns != 3 {
		t.Errorf("rebuild without Before: %+v, want only the turn Before held back added", rep)
	}
	rep, err = usagereport.Rebuild(ctx, b, usagereport.RebuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Added != 0 {
		t.Errorf("third rebuild added %d rows, want 0", rep.Added)
	}
	total, err := ledger.Query(ctx, sessions.UsageFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(total) != 1 || total[0].Turns != 3 || math.Abs(total[0].Cost-1.502) > 1e-9 {
		t.Errorf("ledger total %+v, want 3 turns, 1.502 USD", total)
	}
}
