package pgstore

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func msg(id, parent, text string) TranscriptEntry {
	body, _ := json.Marshal(map[string]any{"type": "message", "id": id, "parentId": parent,
		"message": map[string]any{"role": "user", "content": []map[string]string{{"type": "text", "text": text}}}})
	return TranscriptEntry{ID: id, ParentID: parent, Type: "message", Body: body}
}

func compaction(id, parent, firstKept string) TranscriptEntry {
	body, _ := json.Marshal(map[string]any{"type": TypeCompaction, "id": id, "parentId": parent,
		"summary": "summary of " + firstKept, "firstKeptEntryId": firstKept, "tokensBefore": 80000, "tokensAfter": 5000})
	return TranscriptEntry{ID: id, ParentID: parent, Type: TypeCompaction, Body: body}
}

func ids(es []TranscriptEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

func TestAppendAndLoadFromLatestCompaction(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	const sid = "4f7c2a9e-0000-4000-8000-000000000001"

	tail, err := db.LoadFromLatestCompaction(ctx, sid)
	if err != nil || len(tail.Entries) != 0 || tail.Compaction != -1 {
		t.Fatalf("empty session: %+v %v", tail, err)
	}
	hdr := TranscriptEntry{ID: sid, Type: "session", Body: json.RawMessage(`{"type":"session","version":3,"id":"` + sid + `"}`)}
	seqs, err := db.Append(ctx, sid, hdr, msg("a1", "", "one"), msg("a2", "a1", "two"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seqs, []int64{1, 2, 3}) {
		t.Fatalf("seqs %v, want 1 2 3", seqs)
	}
	tail, err = db.LoadFromLatestCompaction(ctx, sid)
	if err != nil || tail.Compaction != -1 || !slices.Equal(ids(tail.Entries), []string{sid, "a1", "a2"}) {
		t.Fatalf("without compaction: %v %+v %v", ids(tail.Entries), tail.Compaction, err)
	}
	// Bodies come back byte for byte (json, not jsonb: key order kept).
	if got := string(tail.Entries[1].Body); got != string(msg("a1", "", "one").Body) || tail.Entries[1].ParentID != "" ||
		tail.Entries[2].ParentID != "a1" {
		t.Errorf("entry round trip: %s parent %q", got, tail.Entries[2].ParentID)
	}

	// Two compactions: only the latest counts, from the entry it kept.
	var batch []TranscriptEntry
	parent := "a2"
	for i := 3; i <= 20; i++ {
		id := fmt.Sprintf("a%d", i)
		batch = append(batch, msg(id, parent, id))
		parent = id
	}
	batch = append(batch, compaction("c1", parent, "a10"))
	for i := 21; i <= 30; i++ {
		id := fmt.Sprintf("a%d", i)
		prev := parent
		if i == 21 {
			prev = "c1"
		}
		batch = append(batch, msg(id, prev, id))
		parent = id
	}
	batch = append(batch, compaction("c2", parent, "a27"), msg("a31", "c2", "after"))
	if _, err := db.Append(ctx, sid, batch...); err != nil {
		t.Fatal(err)
	}
	tail, err = db.LoadFromLatestCompaction(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a27", "a28", "a29", "a30", "c2", "a31"}
	if !slices.Equal(ids(tail.Entries), want) || tail.Compaction != 4 {
		t.Errorf("tail %v (compaction at %d), want %v (at 4)", ids(tail.Entries), tail.Compaction, want)
	}
	all, err := db.Load(ctx, sid, 1)
	if err != nil || len(all) != 3+18+1+10+2 {
		t.Fatalf("Load all: %d entries, %v", len(all), err)
	}
	for i, e := range all {
		if e.Seq != int64(i+1) {
			t.Fatalf("entry %d has seq %d", i, e.Seq)
		}
	}

	// Rejected appends write nothing.
	bad := []TranscriptEntry{msg("ok", "a31", "x"), {ID: "b", Type: "message", Body: json.RawMessage(`{"broken`)}}
	if _, err := db.Append(ctx, sid, bad...); err == nil || !strings.Contains(err.Error(), "pgstore: append") {
		t.Errorf("bad JSON: %v", err)
	}
	if _, err := db.Append(ctx, sid, msg("a1", "a31", "duplicate id")); err == nil {
		t.Error("an entry id used twice in one session was accepted")
	}
	if n, _ := db.Load(ctx, sid, 1); len(n) != len(all) {
		t.Errorf("failed appends left %d entries, want %d", len(n), len(all))
	}
	// The sequence continues without a gap after a failed append.
	if seqs, err := db.Append(ctx, sid, msg("a32", "a31", "next")); err != nil || seqs[0] != int64(len(all)+1) {
		t.Errorf("append after failures: %v %v", seqs, err)
	}
}

func TestConcurrentAppendsSerialised(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	sessions := []string{"s-one", "s-'two'", "s-三"}
	const per = 6 // appends per goroutine, two entries each
	run(t, workers, func(g int) error {
		sid := sessions[g%len(sessions)]
		for i := range per {
			a, b := fmt.Sprintf("g%d-%d-a", g, i), fmt.Sprintf("g%d-%d-b", g, i)
			seqs, err := db.Append(ctx, sid, msg(a, "", a), msg(b, a, b))
			if err != nil {
				return err
			}
			if len(seqs) != 2 || seqs[1] != seqs[0]+1 {
				return fmt.Errorf("batch of two got seqs %v", seqs)
			}
		}
		return nil
	})
	total := 0
	for i, sid := range sessions {
		all, err := db.Load(ctx, sid, 1)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for g := i; g < workers; g += len(sessions) {
			n += 2 * per
		}
		if len(all) != n {
			t.Errorf("%s: %d entries, want %d", sid, len(all), n)
		}
		for j, e := range all {
			if e.Seq != int64(j+1) {
				t.Fatalf("%s: entry %d has seq %d (gap or duplicate)", sid, j, e.Seq)
			}
			if j%2 == 1 && e.ParentID != all[j-1].ID {
				t.Errorf("%s: batch split: %s follows %s", sid, e.ID, all[j-1].ID)
			}
		}
		total += len(all)
	}
	if total != workers*per*2 {
		t.Errorf("%d entries in all, want %d", total, workers*per*2)
	}
}

// Loading a long session among many finds its latest compaction through
// the partial index and reads rows from there on: the plan never scans
// the table.
func TestLoadPlanUsesCompactionIndex(t *testing.T) {
	t.Parallel()
	db, _ := openTest(t)
	ctx := ctxT(t)
	const sid, n = "long", 5000
	var batch []TranscriptEntry
	for i := 1; i <= n; i++ {
		id := fmt.Sprint("e", i)
		if i%1000 == 0 {
			batch = append(batch, compaction(id, "", fmt.Sprint("e", i-5)))
		} else {
			batch = append(batch, msg(id, "", "text"))
		}
		if len(batch) == 500 {
			if _, err := db.Append(ctx, sid, batch...); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	// Other sessions share the table, as in production.
	for s := range 100 {
		var other []TranscriptEntry
		for i := range 100 {
			other = append(other, msg(fmt.Sprint("o", i), "", "x"))
		}
		if _, err := db.Append(ctx, fmt.Sprint("other-", s), other...); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.pool.Exec(ctx, `ANALYZE transcript_entries`); err != nil {
		t.Fatal(err)
	}
	rows, err := db.pool.Query(ctx, `EXPLAIN `+loadTailSQL, sid)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	plan := strings.Join(lines, "\n")
	if !strings.Contains(plan, "transcript_compactions") || strings.Contains(plan, "Seq Scan") {
		t.Errorf("load plan does not start from the compaction index:\n%s", plan)
	}
	tail, err := db.LoadFromLatestCompaction(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	if len(tail.Entries) != 6 || tail.Entries[0].ID != "e4995" || tail.Compaction != 5 {
		t.Errorf("tail %v (compaction at %d), want e4995..e5000 (at 5)", ids(tail.Entries), tail.Compaction)
	}
}
