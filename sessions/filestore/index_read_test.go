package filestore

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
)

// indexOf renders entries as encodeLocked writes sessions.json.
func indexOf(t testing.TB, entries map[string]sessions.Entry) []byte {
	t.Helper()
	st := &Store{slots: map[string]slot{}}
	for k, e := range entries {
		c, err := packEntry(&e)
		if err != nil {
			t.Fatal(err)
		}
		st.slots[k] = newSlot(c)
	}
	b, err := st.encodeLocked()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decodeGeneral reads an index with the general decoder alone (as readIndex
// does when its fast path declines).
func decodeGeneral(b []byte) (map[string]slot, error) {
	slots := map[string]slot{}
	err := decodeEntries(bytes.NewReader(b), slots, repairNone, false)
	if err != nil {
		clear(slots)
		if decodeEntries(bytes.NewReader(b), slots, repairNone, true) == nil {
			err = nil
		}
	}
	return slots, err
}

// checkIndexRead checks that readIndex reads b as the general decoder does.
func checkIndexRead(t *testing.T, b []byte) (map[string]slot, error) {
	t.Helper()
	got, err := readIndex(bytes.NewReader(b), int64(len(b)), repairNone)
	want, werr := decodeGeneral(b)
	if (err == nil) != (werr == nil) || (err != nil && err.Error() != werr.Error()) {
		t.Fatalf("readIndex(%q): error %v, the general decoder %v", b, err, werr)
	}
	if err != nil {
		return nil, err
	}
	if len(got) != len(want) {
		t.Fatalf("readIndex(%q): %d entries, the general decoder %d", b, len(got), len(want))
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok || !bytes.Equal(g.c, w.c) || g.updated != w.updated || g.active != w.active {
			t.Fatalf("readIndex(%q): entry %q differs from the general decoder's", b, k)
		}
	}
	return got, nil
}

func TestIndexRead(t *testing.T) {
	e := sampleEntry()
	e2 := e
	e2.SessionKey, e2.SessionID, e2.Title = "agent:main:telegram:direct:\"43\"", "13ddb47b-e81f-42dd-a012-b5c37967bd1d", ""
	written := string(indexOf(t, map[string]sessions.Entry{e.SessionKey: e, e2.SessionKey: e2}))
	pretty, _ := json.MarshalIndent(map[string]sessions.Entry{e.SessionKey: e}, "", "  ")
	tests := []struct {
		name, in string
		n        int    // entries
		err      string // in the error, when there is one
	}{
		{"as written", written, 2, ""},
		{"empty file", "", 0, ""},
		{"empty index", "{\n}\n", 0, ""},
		{"pretty", string(pretty), 1, ""},
		{"long line", strings.Replace(written, `"title":"`, `"title":"`+strings.Repeat("x", 300<<10), 1), 2, ""},
		{"crlf", strings.ReplaceAll(written, "\n", "\r\n"), 2, ""},
		{"one line", strings.ReplaceAll(written, "\n", ""), 2, ""},
		{"no final newline", strings.TrimSuffix(written, "\n"), 2, ""},
		{"entry with spaces", strings.Replace(written, `{"sessionKey"`, `{ "sessionKey"`, 1), 2, ""},
		{"unknown field", strings.Replace(written, `{"sessionKey"`, `{"future":[1,{"a":2}],"sessionKey"`, 1), 2, ""},
		{"duplicate key", strings.Replace(written, `"agent:main:telegram:direct:\"43\""`, `"agent:main:telegram:direct:42"`, 1), 1, ""},
		{"escaped key", strings.Replace(written, `"agent:main:telegram:direct:42": `, `"agent:main:telegram:direct:\u0034\u0032": `, 1), 2, ""},
		{"wrong type", strings.Replace(written, `"messageCount":7`, `"messageCount":"7"`, 1), 0, `entry "agent:main:telegram:direct:\"43\""`},
		{"bad time", strings.Replace(written, `"updatedAt":"`, `"updatedAt":"x`, 1), 0, `entry "agent:main:telegram:direct:\"43\""`},
		{"trailing comma", strings.Replace(written, "\n}\n", ",\n}\n", 1), 0, "invalid character"},
		{"missing comma", strings.Replace(written, "},\n", "}\n", 1), 0, "invalid character"},
		{"cut", written[:len(written)/2], 0, "unexpected EOF"},
		{"not an object", "[]\n", 0, "not a JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := checkIndexRead(t, []byte(tc.in))
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one with %q", err, tc.err)
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case len(got) != tc.n:
				t.Fatalf("%d entries, want %d", len(got), tc.n)
			}
		})
	}
	got, _ := checkIndexRead(t, []byte(written))
	if g := got[e.SessionKey].entry(); !sameEntry(g, e) {
		t.Errorf("entry = %+v, want %+v", g, e)
	}
	// Written back, the index is the same bytes.
	st := &Store{slots: got}
	if b, _ := st.encodeLocked(); string(b) != written {
		t.Errorf("re-encoded:\n%s\nwant\n%s", b, written)
	}
}

// FuzzIndexRead: the fast path of readIndex reads every index as the
// general decoder does (or declines it).
func FuzzIndexRead(f *testing.F) {
	at := time.Date(2026, 3, 1, 4, 5, 6, 0, time.UTC)
	f.Add(indexOf(f, map[string]sessions.Entry{
		"agent:main:main": {SessionKey: "agent:main:main", SessionID: "03ddb47b-e81f-42dd-a012-b5c37967bd1d", CreatedAt: at, UpdatedAt: at, MessageCount: 2},
		"agent:main:x":    {SessionKey: "agent:main:x", Title: "<é>"},
	}))
	f.Add([]byte("{\n}\n"))
	f.Add([]byte(`{"k": {"createdAt": 1767225600000}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkIndexRead(t, b)
	})
}

// FuzzDeltaLine: a change log line read fast is what encoding/json reads.
func FuzzDeltaLine(f *testing.F) {
	e := sampleEntry()
	eb, _ := json.Marshal(&e)
	b, _ := json.Marshal(deltaLine{K: "agent:main:main", E: eb})
	f.Add(b)
	f.Add([]byte(`{"k":"agent:main:main","d":true}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		k, c, del, ok := scanDeltaLine(nil, line)
		if !ok {
			return
		}
		var l deltaLine
		if err := json.Unmarshal(line, &l); err != nil {
			t.Fatalf("scanDeltaLine read %q, which encoding/json refuses: %v", line, err)
		}
		if l.K != k || l.D != del || (l.E == nil) != del {
			t.Fatalf("scanDeltaLine(%q) = %q %v, encoding/json %+v", line, k, del, l)
		}
		if del {
			return
		}
		le, err := decodeEntry(l.E, false)
		if err != nil {
			t.Fatalf("scanDeltaLine read %q, whose entry decodeEntry refuses: %v", line, err)
		}
		if !sameEntry(c.entry(), le) {
			t.Fatalf("scanDeltaLine(%q): entry %+v, encoding/json %+v", line, c.entry(), le)
		}
	})
}

// BenchmarkIndexRead: reading an index of 100,000 entries like those a
// daemon writes (readIndex and what a load builds beside it), as the store
// writes it (the fast path) and as one line of JSON (what another writer
// may leave: the general decoder).
func BenchmarkIndexRead(b *testing.B) {
	const n = 100000
	entries := seedEntries(n)
	other, err := json.Marshal(entries)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{{"written", indexOf(b, entries)}, {"other", other}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.data)))
			b.ReportAllocs()
			for b.Loop() {
				slots, err := readIndex(bytes.NewReader(tc.data), int64(len(tc.data)), repairDue)
				if err != nil || len(slots) != n {
					b.Fatal(len(slots), err)
				}
			}
		})
	}
}

// TestIndexEntries: the map a load makes is sized from the file's first
// lines. An index as written gets about its number of entries; a file of
// another layout never gets a map much larger than it can hold entries
// (a pretty-printed index, or a file of short lines, once made a map of
// up to 16 million slots, over a GB, before its first entry was read).
func TestIndexEntries(t *testing.T) {
	const n = 2000
	entries := seedEntries(n)
	pretty, err := json.MarshalIndent(entries, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	shortLines := "{\n" + strings.Repeat("\"\n", 8<<20)
	zero, _ := json.Marshal(&sessions.Entry{})
	shortest := len(`"": `) + len(zero) // an entry line as written
	tests := []struct {
		name     string
		in       []byte
		min, max int
	}{
		{"as written", indexOf(t, entries), n * 9 / 10, n * 12 / 10},
		{"pretty", pretty, 0, n * 12 / 10},
		{"short lines", []byte(shortLines), 0, len(shortLines) / shortest * 12 / 10},
		{"newlines", []byte("{\n" + strings.Repeat("\n", 8<<20)), 0, 0},
		{"empty", nil, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := indexEntries(bufio.NewReaderSize(bytes.NewReader(tc.in), 256<<10), int64(len(tc.in)))
			if got < tc.min || got > tc.max {
				t.Errorf("indexEntries = %d for %d bytes, want %d to %d", got, len(tc.in), tc.min, tc.max)
			}
		})
	}
}
