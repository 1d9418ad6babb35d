package filestore

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
)

// TestJournalLineMatchesMarshal: the hand-written mark lines are the bytes
// json.Marshal writes, and decode to the same journalLine.
func TestJournalLineMatchesMarshal(t *testing.T) {
	odd := []string{"", "r1", "a-b_c.d:e", `q"uote`, `back\slash`, "<tag>&amp;", "é日本", "bad\xff", "\u2028", "ctl\x01\n"}
	zones := []*time.Location{time.UTC, time.FixedZone("p", 5*3600+30*60), time.FixedZone("s", 7), time.FixedZone("n", -8*3600)}
	var lines []journalLine
	for _, s := range odd {
		for _, op := range []string{"start", "done", "sent", s} {
			lines = append(lines, journalLine{Op: op, IDs: []string{s, "x"}}, journalLine{Op: op, ID: s, N: -3})
		}
	}
	for _, z := range zones {
		for _, at := range []time.Time{
			time.Date(2026, 11, 30, 3, 4, 5, 0, z), time.Date(2026, 1, 2, 3, 4, 5, 120_000_000, z),
			time.Date(1, 1, 1, 0, 0, 0, 1, z), time.Date(10000, 1, 1, 0, 0, 0, 0, z), time.Date(-5, 1, 1, 0, 0, 0, 0, z),
			time.Now().In(z), // with a monotonic reading
		} {
			lines = append(lines, journalLine{Op: "done", IDs: []string{"a"}, At: at}, journalLine{Op: "sent", ID: "r", N: 2, At: at})
		}
	}
	payloads := []json.RawMessage{nil, {}, json.RawMessage(`{"text":"hi","n":1}`), json.RawMessage(`{ "text" : "spaced" }`),
		json.RawMessage(`{"t":"<b>&"}`), json.RawMessage(`{"t":"\u003cb\u003e"}`), json.RawMessage("{\"t\":\"\u2028\"}"),
		json.RawMessage(`{"t":"é日本"}`), json.RawMessage(`[1,2]`), json.RawMessage(`{"broken":`), json.RawMessage(`"x"`),
		json.RawMessage(`{"t":"a b","u":"a\" b"}`), json.RawMessage(`{"t":"a\\" ,"u":1}`), json.RawMessage(`{"t":"€ ok"}`),
		json.RawMessage(`{"t":"tab\there"}`), json.RawMessage(" 1"), json.RawMessage(`{"a":[1, 2]}`)}
	for i, pl := range payloads {
		s := odd[i%len(odd)]
		at := time.Date(2026, 11, 30, 3, 4, 5, i*1000, zones[i%len(zones)])
		lines = append(lines,
			journalLine{Op: "accept", At: at, Rec: &sessions.Record{ID: s, AgentID: "main", SessionKey: "agent:main:" + s, Payload: pl, AcceptedAt: at}},
			journalLine{Op: "accept", Rec: &sessions.Record{ID: "r", Payload: pl, Starts: i, Failures: -i, Attempts: 1, Consumed: i%2 == 0}},
			journalLine{Op: "ready", Reply: &sessions.Reply{ID: s, Records: []string{s, "r2"}, AgentID: s, SessionKey: s, Target: pl,
				Chunks: []string{s, "two"}, Sent: i, EntryID: s, Draft: s, CreatedAt: at}},
			journalLine{Op: "ready", ID: "x", N: 1, Reply: &sessions.Reply{ID: "p", Records: []string{}, Target: pl, Chunks: []string{}}},
		)
	}
	for _, at := range []time.Time{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 1, 1, 0, 0, 0, 0, zones[2]), time.Now()} {
		lines = append(lines,
			journalLine{Op: "accept", Rec: &sessions.Record{ID: "r", AcceptedAt: at}},
			journalLine{Op: "ready", Reply: &sessions.Reply{ID: "p", CreatedAt: at}},
		)
	}
	lines = append(lines,
		journalLine{Op: "accept", Rec: &sessions.Record{ID: "r<1>"}},
		journalLine{Op: "ready", Reply: &sessions.Reply{ID: "p", Records: []string{"r"}}},
		journalLine{Op: "draft", Draft: &sessions.Draft{ID: "d"}},
		journalLine{Op: "fail", IDs: []string{}}, // empty: omitted
	)
	for i, l := range lines {
		want, werr := json.Marshal(l)
		got, gerr := appendJournalLine([]byte("prefix"), &l)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("line %d (%+v): errors differ: %v vs %v", i, l, werr, gerr)
		}
		if werr != nil {
			continue
		}
		if !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Fatalf("line %d:\nhand-written %s\njson.Marshal prefix%s", i, got, want)
		}
		var a, b journalLine
		if err := json.Unmarshal(got[len("prefix"):], &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(want, &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("line %d decodes to %+v, json.Marshal's to %+v", i, a, b)
		}
	}
}

// BenchmarkJournalLineEncode encodes the lines every message writes with a
// record or a reply (accept, ready), without the write.
func BenchmarkJournalLineEncode(b *testing.B) {
	at := time.Date(2026, 11, 30, 3, 4, 5, 123456789, time.UTC)
	payload := json.RawMessage(`{"channel":"telegram","accountId":"default","chatType":"direct","chatId":"1234567","senderId":"1234567","senderName":"bench user","messageId":"42","text":"a typical chat message of a few dozen characters, nothing more","at":"2026-11-30T03:04:05Z"}`)
	lines := map[string]*journalLine{
		"accept": {Op: "accept", Rec: &sessions.Record{ID: "telegram:default:1234567:42", AgentID: "main",
			SessionKey: "agent:main:telegram:direct:1234567", Payload: payload, AcceptedAt: at}},
		"ready": {Op: "ready", Reply: &sessions.Reply{ID: "9f1c2a7e", Records: []string{"telegram:default:1234567:42"}, AgentID: "main",
			SessionKey: "agent:main:telegram:direct:1234567", Target: json.RawMessage(`{"channel":"telegram","accountId":"default","chatId":"1234567"}`),
			Chunks: []string{"a reply of about the same size as the message it answers, give or take"}, EntryID: "0a1b2c3d", CreatedAt: at}},
	}
	nonASCII := *lines["ready"].Reply
	nonASCII.Chunks = []string{"一条与它回答的消息差不多长的回复，前后差不了几个字，就这样。"}
	lines["ready-nonascii"] = &journalLine{Op: "ready", Reply: &nonASCII}
	for name, l := range lines {
		b.Run(name, func(b *testing.B) {
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if buf, err = appendJournalLine(buf[:0], l); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzPlainRaw: a raw value plainRaw accepts is what json.Marshal writes
// for it, byte for byte.
func FuzzPlainRaw(f *testing.F) {
	for _, seed := range []string{`{"a":"b c"}`, `{"a":"\\" ,"b":1}`, "\"\u2028\"", `{"<":1}`, `[1, 2]`, `"x\"y"`, `{"t":"€"}`, ``} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		raw := json.RawMessage(b)
		if !plainRaw(raw) {
			return
		}
		want, err := json.Marshal(raw)
		if err != nil {
			t.Fatalf("plainRaw accepts %q, which json.Marshal rejects: %v", b, err)
		}
		if got := appendRaw(nil, raw); !bytes.Equal(got, want) {
			t.Fatalf("plainRaw accepts %q; json.Marshal writes %q", got, want)
		}
	})
}

// The replay's done-line decoder agrees with encoding/json on every line
// it takes, and leaves every other line to it.
func TestParseDoneLineMatchesJSON(t *testing.T) {
	at := time.Date(2026, 12, 1, 15, 4, 5, 123456789, time.UTC)
	var lines [][]byte
	for _, l := range []journalLine{
		{Op: "done", IDs: []string{"telegram:main:-1001:42"}, At: at},
		{Op: "done", IDs: []string{"a", "b", "c"}, At: at.Truncate(time.Second)},
		{Op: "done", IDs: []string{"ü:é"}, At: at.In(time.FixedZone("", 5*3600+1800))},
		{Op: "done", IDs: []string{"x"}},
		{Op: "done", IDs: []string{`quote"d`, "<html>"}, At: at},
		{Op: "done", IDs: []string{"tab\there"}, At: at},
		{Op: "sent", ID: "r", N: 2, At: at},
	} {
		b, err := appendJournalLine(nil, &l)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, b)
	}
	lines = append(lines,
		[]byte(`{"op":"done","ids":[],"at":"2026-12-01T15:04:05Z"}`),
		[]byte(`{"op":"done","ids":["a"],"at":"not a time"}`),
		[]byte(`{"op":"done","ids":["a"],"at":"2026-12-01T15:04:05Z","n":1}`),
		[]byte(`{"op":"done","ids":["a"]`),
		[]byte(`{"op":"done","ids":["a"`),
	)
	fast := 0
	for _, b := range lines {
		got, ok := parseDoneLine(b)
		if !ok {
			continue
		}
		fast++
		want, err := decodeJournalLine(b)
		if err != nil {
			t.Errorf("%s: taken by the fast path, refused by encoding/json: %v", b, err)
			continue
		}
		if got.Op != want.Op || !slices.Equal(got.IDs, want.IDs) || !got.At.Equal(want.At) || got.ID != want.ID || got.N != want.N {
			t.Errorf("%s: fast path %+v, encoding/json %+v", b, got, want)
		}
	}
	if fast != 4 {
		t.Errorf("the fast path took %d lines; want the 4 done lines of plain ids", fast)
	}
}

// TestJournalLineEncodeKeepsLineOnStack: encoding a plain line (a mark, as
// every message writes several) allocates nothing: the line a caller
// builds stays on its stack (issue 21: the json.Marshal fallback took its
// address, so every line was copied to the heap first).
func TestJournalLineEncodeKeepsLineOnStack(t *testing.T) {
	at := time.Date(2026, 11, 30, 3, 4, 5, 123456789, time.UTC)
	buf := make([]byte, 0, 256)
	n := testing.AllocsPerRun(100, func() {
		l := journalLine{Op: "sent", ID: "9f1c2a7e", N: 1, At: at}
		var err error
		if buf, err = appendJournalLine(buf[:0], &l); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("a mark's line: %v allocations, want 0", n)
	}
}
