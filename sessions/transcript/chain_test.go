package transcript

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
)

// chainEntry is one line of chainEntries and, for a message entry, what
// its writer holds decoded (msg nil otherwise).
type chainEntry struct {
	line       []byte
	id, parent string
	msg        *sessions.Message
}

// chainLines is chainEntries' lines.
func chainLines(t *testing.T, rng *rand.Rand, n int) [][]byte {
	t.Helper()
	var lines [][]byte
	for _, e := range chainEntries(t, rng, n) {
		lines = append(lines, e.line)
	}
	return lines
}

// chainEntries builds a random transcript as a Chain reads it: mostly
// messages continuing the leaf (user, assistant, assistant with a tool
// call, tool results, user after user), and now and then a compaction, an
// entry branching off an earlier one, a line repeating an id, or a header.
func chainEntries(t *testing.T, rng *rand.Rand, n int) []chainEntry {
	t.Helper()
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	var entries []chainEntry
	var ids []string
	leaf := ""
	add := func(e chainEntry) {
		entries = append(entries, e)
		ids = append(ids, e.id)
		leaf = e.id
	}
	for i := range n {
		id := fmt.Sprintf("e%04d", i)
		parent := leaf
		switch r := rng.IntN(100); {
		case r < 6 && len(ids) > 2: // a compaction keeping from an earlier entry
			b, err := EncodeCompaction(id, parent, sessions.Compaction{Summary: fmt.Sprint("summary ", i), FirstKeptEntryID: ids[rng.IntN(len(ids))]}, now)
			if err != nil {
				t.Fatal(err)
			}
			add(chainEntry{line: b, id: id, parent: parent})
			continue
		case r < 10 && len(ids) > 1: // a branch off an earlier entry
			parent = ids[rng.IntN(len(ids))]
		case r < 13 && len(ids) > 1: // a later line with an earlier entry's id
			id = ids[rng.IntN(len(ids))]
		case r < 15:
			entries = append(entries, chainEntry{line: []byte(`{"type":"session","version":3,"id":"s1","timestamp":"2026-11-30T10:00:00.000Z"}`)})
			continue
		}
		var m sessions.Message
		switch r := rng.IntN(12); {
		case r < 3:
			m = sessions.UserText(fmt.Sprint("user ", i), now)
		case r < 4: // as a turn appends its inputs: records, history, no timestamp
			m = sessions.UserText(fmt.Sprint("input ", i), time.Time{})
			m.Timestamp, m.RecordIDs, m.HistorySeq = 0, []string{fmt.Sprint("r", i), "r"}, uint64(i)
		case r < 6:
			m = sessions.Message{Role: sessions.RoleAssistant, Content: []sessions.Content{{Type: sessions.BlockText, Text: fmt.Sprint("reply ", i)}}, Timestamp: now.UnixMilli()}
		case r < 7: // a reply as a provider returns it
			m = sessions.Message{Role: sessions.RoleAssistant, Provider: "p", Model: "m", StopReason: "length",
				Usage: &sessions.Usage{Input: int64(i), Output: 3}, Timestamp: now.UnixMilli(),
				Content: []sessions.Content{{Type: sessions.BlockThinking, Thinking: "hm"}, {Type: sessions.BlockText, Text: "<b>\u00e9</b>"}}}
		case r < 9:
			m = sessions.Message{Role: sessions.RoleAssistant, Timestamp: now.UnixMilli(), Content: []sessions.Content{
				{Type: sessions.BlockToolCall, ID: fmt.Sprint("c", i), Name: "x", Arguments: json.RawMessage(` { "a" : [1, 2] } `)}}}
		case r < 10: // no content at all
			m = sessions.Message{Role: sessions.RoleAssistant, Timestamp: now.UnixMilli()}
		default:
			m = sessions.Message{Role: sessions.RoleToolResult, ToolCallID: fmt.Sprint("c", i-1), ToolName: "x", Timestamp: now.UnixMilli(),
				IsError: i%2 == 0, Content: []sessions.Content{{Type: sessions.BlockText, Text: "out"}}}
		}
		b, norm, err := EncodeMessage(id, parent, m, now)
		if err != nil {
			t.Fatal(err)
		}
		add(chainEntry{line: b, id: id, parent: parent, msg: &norm})
	}
	return entries
}

// freshContext is the context of a new chain given lines[:n].
func freshContext(t *testing.T, lines [][]byte, complete bool) (sessions.Context, bool) {
	t.Helper()
	c := NewChain(complete)
	for i, l := range lines {
		if err := c.Add(l, int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	// Resolved once, at the end: nothing cached along the way.
	return c.Context()
}

// TestChainContextExtendsAsRebuilt: a Chain asked for its context after
// every entry (so that each next entry extends the one it built) answers
// what a chain built from the same entries at once answers, through
// merges, tool calls, compactions, branches and repeated ids; and what it
// handed out earlier is never changed by what it extends later.
func TestChainContextExtendsAsRebuilt(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 39))
		lines := chainLines(t, rng, 100)
		c := NewChain(true)
		type handed struct {
			got  sessions.Context
			copy sessions.Context
		}
		var out []handed
		for i, l := range lines {
			if err := c.Add(l, int64(i)); err != nil {
				t.Fatal(err)
			}
			got, ok := c.Context()
			want, wantOK := freshContext(t, lines[:i+1], true)
			if ok != wantOK || !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d, after entry %d (%s):\n extended %v %+v\n  rebuilt %v %+v", seed, i, l, ok, got, wantOK, want)
			}
			cp := got
			cp.Messages = append([]sessions.Message(nil), got.Messages...)
			cp.EntryIDs = append([]string(nil), got.EntryIDs...)
			out = append(out, handed{got: got, copy: cp})
		}
		for i, h := range out {
			if !reflect.DeepEqual(h.got, h.copy) {
				t.Fatalf("seed %d: the context handed out after entry %d changed later", seed, i)
			}
		}
	}
}

// TestChainAddMessageAsAdd: a chain given its message entries decoded
// (AddMessage, as an appender holds them) and the other lines parsed
// answers what a chain given every line parsed answers — Context after
// every entry, History, Records — and what it handed out earlier never
// changes.
func TestChainAddMessageAsAdd(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 40))
		entries := chainEntries(t, rng, 100)
		parsed, decoded := NewChain(true), NewChain(true)
		type handed struct{ got, copy sessions.Context }
		var out []handed
		var ids []string
		for i, e := range entries {
			if err := parsed.Add(e.line, int64(i)); err != nil {
				t.Fatal(err)
			}
			if e.msg != nil {
				decoded.AddMessage(e.id, e.parent, *e.msg, int64(i))
			} else if err := decoded.Add(e.line, int64(i)); err != nil {
				t.Fatal(err)
			}
			if e.id != "" {
				ids = append(ids, e.id)
			}
			if rng.IntN(4) == 0 {
				continue // some entries are added without a context between them
			}
			got, ok := decoded.Context()
			want, wantOK := parsed.Context()
			if ok != wantOK || !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d, after entry %d (%s):\n decoded %v %+v\n  parsed %v %+v", seed, i, e.line, ok, got, wantOK, want)
			}
			cp := got
			cp.Messages = append([]sessions.Message(nil), got.Messages...)
			cp.EntryIDs = append([]string(nil), got.EntryIDs...)
			out = append(out, handed{got: got, copy: cp})
		}
		if got, want := decoded.History(), parsed.History(); !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: history:\n decoded %+v\n  parsed %+v", seed, got, want)
		}
		if got, want := decoded.Records(ids), parsed.Records(ids); !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: records:\n decoded %+v\n  parsed %+v", seed, got, want)
		}
		if decoded.Messages() != parsed.Messages() || decoded.Leaf() != parsed.Leaf() {
			t.Fatalf("seed %d: %d messages, leaf %q; parsed %d, %q", seed, decoded.Messages(), decoded.Leaf(), parsed.Messages(), parsed.Leaf())
		}
		for i, h := range out {
			if !reflect.DeepEqual(h.got, h.copy) {
				t.Fatalf("seed %d: the context handed out after entry %d changed later", seed, i)
			}
		}
	}
}

// TestChainContextIncomplete: a chain that does not start at the
// transcript's beginning reports !ok while its walk needs an entry not
// added, and extends once it has resolved.
func TestChainContextIncomplete(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	line := func(id, parent, text string) []byte {
		b, _, err := EncodeMessage(id, parent, sessions.UserText(text, now), now)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	c := NewChain(false)
	if err := c.Add(line("b", "a", "needs a"), 5); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Context(); ok {
		t.Fatal("a chain missing its parent entry reported a context")
	}
	comp, err := EncodeCompaction("k", "b", sessions.Compaction{Summary: "s", FirstKeptEntryID: "b"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Add(comp, 6); err != nil {
		t.Fatal(err)
	}
	if err := c.Add(line("d", "k", "after"), 7); err != nil {
		t.Fatal(err)
	}
	got, ok := c.Context()
	if !ok || len(got.Messages) == 0 || got.LeafID != "d" {
		t.Fatalf("after a compaction keeping from an added entry: %v %+v", ok, got)
	}
	if err := c.Add(line("e", "d", "more"), 8); err != nil {
		t.Fatal(err)
	}
	if got, ok = c.Context(); !ok || got.LeafID != "e" {
		t.Fatalf("extended: %v %+v", ok, got)
	}
}

// BenchmarkChainTurn is what the PostgreSQL backend's cached chain does
// per turn of a session of n messages whose context was built at the turn
// before: add the turn's two entries (the user's, the reply) and build the
// context.
func BenchmarkChainTurn(b *testing.B) {
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	user := sessions.UserText("a message of a few words", now)
	reply := sessions.Message{Role: sessions.RoleAssistant, Content: []sessions.Content{{Type: sessions.BlockText, Text: "a reply of a few words"}}, Timestamp: now.UnixMilli()}
	for _, n := range []int{30, 150, 500} {
		lines := make([][]byte, n+2)
		leaf := ""
		for i := range lines {
			m := user
			if i%2 == 1 {
				m = reply
			}
			id := fmt.Sprintf("e%07d", i)
			line, _, err := EncodeMessage(id, leaf, m, now)
			if err != nil {
				b.Fatal(err)
			}
			lines[i], leaf = line, id
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				c := NewChain(true)
				for i, l := range lines[:n] {
					if err := c.Add(l, int64(i)); err != nil {
						b.Fatal(err)
					}
				}
				c.Context() // the turn before's
				b.StartTimer()
				for i, l := range lines[n:] {
					if err := c.Add(l, int64(n+i)); err != nil {
						b.Fatal(err)
					}
				}
				if _, ok := c.Context(); !ok {
					b.Fatal("no context")
				}
			}
		})
	}
}
