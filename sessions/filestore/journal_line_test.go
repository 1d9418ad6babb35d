package filestore

import (
	"bytes"
	"encoding/json"
	"reflect"
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
