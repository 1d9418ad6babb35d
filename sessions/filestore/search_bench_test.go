package filestore

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
)

// searchBenchEnv sets the corpus size of the search benchmarks in messages
// (100 per session): the target is 1000000 (10,000 sessions); the
// default keeps a routine run short. The corpus is built once per size
// and kept under the temp dir.
const searchBenchEnv = "GATEWAY_SEARCH_BENCH_MESSAGES"

const benchPerSession = 100

// benchVocab is a Zipf-distributed vocabulary of made-up words.
type benchVocab struct {
	words []string
	zipf  *rand.Zipf
	r     *rand.Rand
}

func newBenchVocab(seed uint64) *benchVocab {
	r := rand.New(rand.NewPCG(seed, 1))
	v := &benchVocab{r: r, words: make([]string, 20000)}
	const letters = "abcdefghijklmnopqrstuvwxyz"
	for i := range v.words {
		var b strings.Builder
		for range 3 + r.IntN(7) {
			b.WriteByte(letters[r.IntN(len(letters))])
		}
		v.words[i] = b.String() + strconv.Itoa(i%10)
	}
	v.zipf = rand.NewZipf(r, 1.1, 1, uint64(len(v.words)-1))
	return v
}

func (v *benchVocab) message() string {
	n := 5 + v.r.IntN(35)
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(v.words[v.zipf.Uint64()])
	}
	return b.String()
}

// searchCorpus returns a state dir with n messages in n/100 sessions of
// two agents (built on first use and cached).
func searchCorpus(b *testing.B, n int) string {
	b.Helper()
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("gateway-search-bench-v2-%d", n))
	if _, err := os.Stat(filepath.Join(dir, "complete")); err == nil {
		return dir
	}
	_ = os.RemoveAll(dir)
	start := time.Now()
	m, err := Open(Options{StateDir: dir, FlushInterval: time.Hour, CacheTTL: -1})
	if err != nil {
		b.Fatal(err)
	}
	v := newBenchVocab(7)
	ctx := context.Background()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sessionsN := max(n/benchPerSession, 1)
	for s := range sessionsN {
		agent := "main"
		if s%4 == 3 {
			agent = "ops"
		}
		k, err := routing.PeerKey(agent, "telegram", "", routing.Group, strconv.Itoa(-1000000-s))
		if err != nil {
			b.Fatal(err)
		}
		st, err := m.Store(agent)
		if err != nil {
			b.Fatal(err)
		}
		e, _, err := st.Begin(ctx, k, sessions.Origin{Channel: "telegram", At: base})
		if err != nil {
			b.Fatal(err)
		}
		var buf bytes.Buffer
		h, _ := transcript.EncodeHeader(e.SessionID, transcript.Header{AgentID: agent, SessionKey: e.SessionKey}, base)
		buf.Write(h)
		buf.WriteByte('\n')
		parent := ""
		for i := range benchPerSession {
			at := base.Add(time.Duration(s*benchPerSession+i) * time.Second)
			msg := sessions.UserText(v.message(), at)
			if i%2 == 1 {
				msg.Role = sessions.RoleAssistant
			}
			id := transcript.NewEntryID(uint32(i + 1))
			line, _, err := transcript.EncodeMessage(id, parent, msg, at)
			if err != nil {
				b.Fatal(err)
			}
			buf.Write(line)
			buf.WriteByte('\n')
			parent = id
		}
		if err := os.WriteFile(filepath.Join(st.Dir(), e.SessionID+transcriptExt), buf.Bytes(), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	if err := m.Close(); err != nil {
		b.Fatal(err)
	}
	// The Manager above indexed nothing (no append, no search); remove any
	// index so the first benchmark run measures a rebuild.
	_ = os.RemoveAll(filepath.Join(dir, searchDirName))
	if err := os.WriteFile(filepath.Join(dir, "complete"), nil, 0o600); err != nil {
		b.Fatal(err)
	}
	b.Logf("corpus: %d messages in %d sessions built in %v", sessionsN*benchPerSession, sessionsN, time.Since(start))
	return dir
}

func benchCorpusSize(b *testing.B) int {
	n := 100000
	if s := os.Getenv(searchBenchEnv); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < benchPerSession {
			b.Fatalf("%s=%q: want a number of messages >= %d", searchBenchEnv, s, benchPerSession)
		}
		n = v
	}
	return n
}

// BenchmarkSearch runs queries over the corpus on the files backend (the
// daemon's warm index). It logs the load time (a rebuild from the
// transcripts on the first run of a size) and the index size.
func BenchmarkSearch(b *testing.B) {
	n := benchCorpusSize(b)
	dir := searchCorpus(b, n)
	m, err := Open(Options{StateDir: dir, FlushInterval: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	start := time.Now()
	if err := m.search.wait(ctx); err != nil {
		b.Fatal(err)
	}
	load := time.Since(start)
	files, err := SearchFiles(dir)
	if err != nil {
		b.Fatal(err)
	}
	var size int64
	for _, s := range files {
		size += s
	}
	b.Logf("%d messages: index loaded in %v, %d files, %.1f MB (%.1f bytes/message)",
		n, load, len(files), float64(size)/1e6, float64(size)/float64(n))
	v := newBenchVocab(7)
	queries := []struct {
		name string
		q    sessions.SearchQuery
	}{
		{"rare word", sessions.SearchQuery{Text: v.words[5000]}},
		{"common word", sessions.SearchQuery{Text: v.words[1]}},
		{"two words", sessions.SearchQuery{Text: v.words[10] + " " + v.words[100]}},
		{"three common words", sessions.SearchQuery{Text: v.words[1] + " " + v.words[2] + " " + v.words[3]}},
		{"agent and since", sessions.SearchQuery{Text: v.words[50], Agents: []string{"ops"},
			Since: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(n/2) * time.Second)}},
		{"room", sessions.SearchQuery{Text: v.words[50], Room: "-1000007"}},
		{"absent word", sessions.SearchQuery{Text: "zzzzqqq"}},
	}
	for _, qc := range queries {
		b.Run(qc.name, func(b *testing.B) {
			var hits int
			for b.Loop() {
				h, err := m.Backend().Search().Search(ctx, qc.q)
				if err != nil {
					b.Fatal(err)
				}
				hits = len(h)
			}
			b.ReportMetric(float64(hits), "hits")
		})
	}
}

// BenchmarkSearchIndexAppend is the index's cost per appended message (a
// 20-word message): tokenising and adding it to the in-memory tail.
func BenchmarkSearchIndexAppend(b *testing.B) {
	m, err := Open(Options{StateDir: b.TempDir(), FlushInterval: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	x := m.search
	if err := x.wait(context.Background()); err != nil {
		b.Fatal(err)
	}
	v := newBenchVocab(3)
	msgs := make([]sessions.Message, 1024)
	for i := range msgs {
		f := strings.Fields(v.message() + " " + v.message() + " " + v.message())
		msgs[i] = sessions.UserText(strings.Join(f[:min(20, len(f))], " "), time.Now())
	}
	sid := "00000000-0000-4000-8000-000000000001"
	var off int64
	i := 0
	for b.Loop() {
		msg := msgs[i%len(msgs)]
		nodes := []*transcript.Node{{ID: "0000abcd", Off: off, Kind: transcript.KindMessage, IsMessage: true, Msg: &msg}}
		off += 200
		x.appended("main", sid, nodes, off)
		i++
		if i%flushDocs == 0 {
			b.StopTimer()
			x.mu.Lock()
			x.tail = newMemSegment()
			x.mu.Unlock()
			b.StartTimer()
		}
	}
}

// BenchmarkSearchFlushAgedIndex is the writer's minute under steady
// traffic on an index holding a day of a busy bot (500,000 messages of
// sessions that do not reset, one merged segment): 350 messages added
// (500,000 a day), flushed, and merged when due. It reports the messages
// merges rewrote per flush.
func BenchmarkSearchFlushAgedIndex(b *testing.B) {
	core, logs := observer.New(zapcore.InfoLevel)
	m, err := Open(Options{StateDir: b.TempDir(), FlushInterval: time.Hour, Logger: zap.New(core)})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	st, err := m.Store("main")
	if err != nil {
		b.Fatal(err)
	}
	k, _ := routing.PeerKey("main", "telegram", "", routing.Direct, "1")
	e, _, err := st.Begin(ctx, k, sessions.Origin{Channel: "telegram"})
	if err != nil {
		b.Fatal(err)
	}
	x := m.search
	if err := x.wait(ctx); err != nil {
		b.Fatal(err)
	}
	var off int64
	indexDocs(x, e.SessionID, 500000, &off)
	if err := x.flush(); err != nil {
		b.Fatal(err)
	}
	if err := x.merge(ctx); err != nil {
		b.Fatal(err)
	}
	before := mergedDocs(logs)
	b.ResetTimer()
	for b.Loop() {
		indexDocs(x, e.SessionID, 350, &off)
		if err := x.flush(); err != nil {
			b.Fatal(err)
		}
		if err := x.mergeIfDue(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(mergedDocs(logs)-before)/float64(b.N), "rewritten/flush")
}
