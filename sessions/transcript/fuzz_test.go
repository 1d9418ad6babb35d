package transcript

import (
	"bytes"
	"context"
	"os"
	"testing"

	"go.uber.org/zap"
)

// FuzzLoadTranscript feeds arbitrary bytes to every reader: none may panic,
// and a file that loads must accept an append that then reads back as the
// leaf. The file lives in memory (memFS): each execution runs File's own
// loader and writer, as LoadFile, ReadHistory and the daemon do, without a
// temp dir or a write to disk, which kept the target near 65 executions a
// second.
func FuzzLoadTranscript(f *testing.F) {
	for _, name := range []string{"testdata/pi_session.jsonl", "testdata/written.golden.jsonl"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, int64(0))
		f.Add(b[:len(b)/2], int64(len(b)/3))
	}
	hdr := `{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}` + "\n"
	f.Add([]byte(hdr+`{"type":"x","id":"a","parentId":"a"}`+"\n"+`{"type":"compaction","id":"b","parentId":"c","firstKeptEntryId":"a"}`+"\n"), int64(len(hdr)))
	f.Add([]byte(hdr+`{"type":"message","id":"a","parentId":"b","message":{"role":"user","content":"x"}}`+"\n"+
		`{"type":"message","id":"b","parentId":"a","message":{"role":"assistant","content":[{"type":"toolCall","id":"1"}]}}`), int64(0))
	f.Add([]byte{}, int64(0))
	f.Add([]byte("\n\n\n"), int64(1))

	f.Fuzz(func(t *testing.T, data []byte, hint int64) { loadAndAppend(t, data, hint) })
}

// loadAndAppend is FuzzLoadTranscript's body: data is the file, hint the
// compaction offset its index entry would give.
func loadAndAppend(t testing.TB, data []byte, hint int64) {
	const path = "/fuzz/f.jsonl"
	ctx := context.Background()
	mem := newMemFS()
	mem.put(path, data)
	reader := func() *File { // what LoadFile and ReadHistory open
		tr, err := Open(path, "", Header{}, nil, nil, withMemFS(mem))
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	_, loadErr := reader().Context(ctx)
	_, _ = reader().History(ctx)
	if _, err := loadForward(bytes.NewReader(data), memInfo{name: path, size: int64(len(data))}, zap.NewNop()); (err == nil) != (loadErr == nil) {
		// The tail reader may skip a bad line before the kept part; it
		// must never fail where the full reader succeeds.
		if loadErr != nil {
			t.Fatalf("tail load failed (%v) where the forward load succeeded", loadErr)
		}
	}
	tr := newTestTranscript(t, path, newMemLocker(), nil, WithCompactionHint(hint), withoutSync(), withMemFS(mem))
	if _, err := tr.Context(ctx); err != nil {
		return
	}
	_, _, _ = tr.Stats(ctx)
	ids, err := tr.Append(ctx, user("fuzz"))
	if err != nil {
		t.Fatalf("Append after a successful load: %v", err)
	}
	c, err := reader().Context(ctx)
	if err != nil {
		t.Fatalf("reload after append: %v", err)
	}
	if c.LeafID != ids[0] {
		t.Fatalf("leaf %q after appending %q", c.LeafID, ids[0])
	}
}

// BenchmarkLoadTranscriptFuzzBody is the cost of one FuzzLoadTranscript
// execution on the seed transcripts (what bounds its executions a second).
func BenchmarkLoadTranscriptFuzzBody(b *testing.B) {
	var seeds [][]byte
	for _, name := range []string{"testdata/pi_session.jsonl", "testdata/written.golden.jsonl"} {
		data, err := os.ReadFile(name)
		if err != nil {
			b.Fatal(err)
		}
		seeds = append(seeds, data)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		loadAndAppend(b, seeds[i%len(seeds)], 0)
	}
}
