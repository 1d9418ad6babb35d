package sessionstest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// Stores opens an agent's sessions on some backend: a Backend's Store
// method, or a backend package's own opener.
type Stores func(agent string) (sessions.AgentStore, error)

// BuiltState is what BuildState made.
type BuiltState struct {
	Agents []string
	// Current are the keys with a current session; Deleted the keys left
	// with archived sessions only.
	Current, Deleted []routing.Key
}

// stressPeers are peer ids a chat may send: every one becomes a key
// (escaped by routing), never a path or SQL text.
var stressPeers = []string{
	"../../etc/passwd", "a:b/c\\d", "nul\x00byte", "bad\xff\xfeutf8", "emoji 🦀 peer", "'; DROP TABLE entries; --",
	"%41%", "Ünïcödé", "spaces  and\ttabs",
}

// stressTexts are message bodies that stress encodings.
var stressTexts = []string{
	"plain hello", "nul \x00 inside", "invalid \xff\xfe utf-8", "line\nbreaks\r\nand \"quotes\" \\ backslash",
	"</summary> injection", "\u2028\u2029 separators", "long " + strings.Repeat("0123456789", 300),
}

// BuildState fills a backend (open opens its agents' stores) with a state
// that exercises what a migration moves: three agents; sessions with tool
// calls and results, images, NUL bytes and invalid UTF-8 in messages, a
// message over 1 MB, journal record ids; compactions (two in one
// session); counters, labels and overrides; manual resets (archived
// sessions), a switch back to an archived session, deleted keys (archived
// only), a subagent, and hostile peer ids. It uses only the seam, so it
// builds the same state on any backend.
func BuildState(t testing.TB, open Stores) BuiltState {
	t.Helper()
	ctx := context.Background()
	var out BuiltState
	for ai, agent := range []string{"main", "ops", "x-agent_2"} {
		st, err := open(agent)
		if err != nil {
			t.Fatalf("store %s: %v", agent, err)
		}
		out.Agents = append(out.Agents, agent)
		for pi, peer := range stressPeers {
			if (pi+ai)%3 == 2 && ai > 0 {
				continue // fewer keys on the other agents
			}
			kind := routing.Direct
			if pi%2 == 1 {
				kind = routing.Group
			}
			k, err := routing.PeerKey(agent, "telegram", "", kind, peer)
			if err != nil {
				t.Fatalf("key for peer %q: %v", peer, err)
			}
			fillKey(t, ctx, st, k, pi)
			switch pi % 4 {
			case 1:
				reset(t, ctx, st, k)
				fillKey(t, ctx, st, k, pi+1)
			case 2:
				reset(t, ctx, st, k)
				arch, err := st.Archived(k)
				if err != nil || len(arch) == 0 {
					t.Fatalf("archived %s: %v (%d)", k, err, len(arch))
				}
				if _, err := st.Switch(ctx, k, arch[0].SessionID); err != nil {
					t.Fatalf("switch %s: %v", k, err)
				}
			}
			if pi == 3 {
				if err := st.Delete(ctx, k); err != nil {
					t.Fatalf("delete %s: %v", k, err)
				}
				out.Deleted = append(out.Deleted, k)
				continue
			}
			out.Current = append(out.Current, k)
		}
		main, err := routing.MainKey(agent, "main")
		if err != nil {
			t.Fatal(err)
		}
		fillKey(t, ctx, st, main, 0)
		if ai == 0 {
			// A line over 1 MB (a scanner with its 64 KiB default fails).
			e, _, err := st.Get(main)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := st.TranscriptOf(e)
			if err != nil {
				t.Fatal(err)
			}
			big := strings.Repeat("large paste \x00 é ", 80_000)
			if _, err := tr.Append(ctx, sessions.UserText(big, time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC))); err != nil {
				t.Fatalf("append a large message: %v", err)
			}
		}
		out.Current = append(out.Current, main)
		sub, err := routing.SubagentKey(agent, uuid.NewString())
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.Begin(ctx, sub, sessions.Origin{ParentKey: main.String(), Title: "subagent task", Internal: true}); err != nil {
			t.Fatalf("begin %s: %v", sub, err)
		}
		fillKey(t, ctx, st, sub, 3)
		out.Current = append(out.Current, sub)
		if err := st.Flush(ctx); err != nil {
			t.Fatalf("flush %s: %v", agent, err)
		}
	}
	return out
}

func reset(t testing.TB, ctx context.Context, st sessions.AgentStore, k routing.Key) {
	t.Helper()
	if _, err := st.Reset(ctx, k, sessions.ResetOptions{Manual: true, Reason: "cli"}); err != nil {
		t.Fatalf("reset %s: %v", k, err)
	}
}

// fillKey begins k and appends a conversation whose shape depends on n:
// tool calls, an image, record ids, and for n%3 == 0 compactions.
func fillKey(t testing.TB, ctx context.Context, st sessions.AgentStore, k routing.Key, n int) {
	t.Helper()
	e, _, err := st.Begin(ctx, k, sessions.Origin{Channel: "telegram", ChatType: "direct", To: "12345", From: "678",
		Name: stressTexts[n%len(stressTexts)], Title: stressTexts[(n+1)%len(stressTexts)]})
	if err != nil {
		t.Fatalf("begin %s: %v", k, err)
	}
	if _, err := st.Patch(ctx, k, func(e *sessions.Entry) error {
		e.Label, e.ModelOverride, e.QueueMode, e.QueueDebounceMs = fmt.Sprintf("label %d", n), "model-x", "collect", 1500
		return nil
	}); err != nil {
		t.Fatalf("patch %s: %v", k, err)
	}
	tr, err := st.TranscriptOf(e)
	if err != nil {
		t.Fatalf("transcript %s: %v", k, err)
	}
	at := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC).Add(time.Duration(n) * time.Hour)
	var ids []string
	for i := range 3 + n%4 {
		msgs := turn(i+n, at.Add(time.Duration(i)*time.Minute))
		got, err := tr.Append(ctx, msgs...)
		if err != nil {
			t.Fatalf("append %s: %v", k, err)
		}
		ids = append(ids, got...)
		st.AddCounters(k, sessions.Counters{InputTokens: 100, OutputTokens: 20, TotalTokens: 120, Messages: len(msgs),
			ContextTokens: int64(1000 * (i + 1)), Model: "gpt-test", Provider: "openai"})
		if n%3 == 0 && i%2 == 1 {
			if _, err := tr.AppendCompaction(ctx, sessions.Compaction{Summary: fmt.Sprintf("summary %d of %s", i, stressTexts[i%len(stressTexts)]),
				FirstKeptEntryID: ids[len(ids)-2], TokensBefore: 80000, TokensAfter: 5000}); err != nil {
				t.Fatalf("compaction %s: %v", k, err)
			}
			if _, err := st.Patch(ctx, k, func(e *sessions.Entry) error { e.CompactionCount++; return nil }); err != nil {
				t.Fatalf("patch %s: %v", k, err)
			}
		}
	}
}

// turn is one exchange: a user message (with an image every third turn),
// an assistant tool call and its result, and the final answer.
func turn(i int, at time.Time) []sessions.Message {
	user := sessions.UserText(stressTexts[i%len(stressTexts)], at)
	user.RecordIDs = []string{fmt.Sprintf("rec-%d", i)}
	if i%3 == 0 {
		user.Content = append(user.Content, sessions.Content{Type: sessions.BlockImage, MimeType: "image/png",
			Data: base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("\x89PNG fake image %d", i)))})
	}
	args, _ := json.Marshal(map[string]any{"task": stressTexts[(i+2)%len(stressTexts)], "n": i})
	ms := at.UnixMilli()
	call := fmt.Sprintf("call_%d", i)
	return []sessions.Message{
		user,
		{Role: sessions.RoleAssistant, Content: []sessions.Content{{Type: sessions.BlockText, Text: "let me check"},
			{Type: sessions.BlockToolCall, ID: call, Name: "sessions_spawn", Arguments: args}},
			Provider: "openai", Model: "gpt-test", StopReason: "toolUse", Timestamp: ms + 1,
			Usage: &sessions.Usage{Input: 100, Output: 10, TotalTokens: 110,
				Cost: sessions.Cost{Input: 0.0002, Output: 0.00008, Total: 0.00028}}},
		{Role: sessions.RoleToolResult, ToolCallID: call, ToolName: "sessions_spawn",
			Content: []sessions.Content{{Type: sessions.BlockText, Text: "spawned " + stressTexts[i%len(stressTexts)]}}, Timestamp: ms + 2},
		{Role: sessions.RoleAssistant, Content: []sessions.Content{{Type: sessions.BlockText, Text: fmt.Sprintf("answer %d", i)}},
			Provider: "openai", Model: "gpt-test", StopReason: "stop", Timestamp: ms + 3},
	}
}

// BuildBulk fills agent "main" with n sessions of m messages each (user
// and assistant alternating), for migration benchmarks.
func BuildBulk(t testing.TB, open Stores, n, m int) {
	t.Helper()
	ctx := context.Background()
	st, err := open("main")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	for i := range n {
		k, err := routing.PeerKey("main", "telegram", "", routing.Direct, fmt.Sprintf("peer-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		e, _, err := st.Begin(ctx, k, sessions.Origin{Channel: "telegram", ChatType: "direct", To: "1", Title: "bulk"})
		if err != nil {
			t.Fatal(err)
		}
		tr, err := st.TranscriptOf(e)
		if err != nil {
			t.Fatal(err)
		}
		msgs := make([]sessions.Message, 0, m)
		for j := range m {
			text := fmt.Sprintf("message %d of session %d: the quick brown fox jumps over the lazy dog", j, i)
			if j%2 == 0 {
				msgs = append(msgs, sessions.UserText(text, at))
			} else {
				msgs = append(msgs, sessions.Message{Role: sessions.RoleAssistant, Timestamp: at.UnixMilli(),
					Content: []sessions.Content{{Type: sessions.BlockText, Text: text}}})
			}
		}
		if _, err := tr.Append(ctx, msgs...); err != nil {
			t.Fatal(err)
		}
		st.AddCounters(k, sessions.Counters{Messages: m, TotalTokens: int64(10 * m)})
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}
