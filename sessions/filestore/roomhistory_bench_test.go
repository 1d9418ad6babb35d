package filestore

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
	"go.uber.org/zap"
)

// benchText is a typical chat line (about 100 bytes).
var benchText = strings.Repeat("so what do we think about the release plan ", 2)

// BenchmarkRoomHistoryAppend keeps unaddressed messages one after another
// (a Telegram poller hands them over in order): each waits for its fsync.
func BenchmarkRoomHistoryAppend(b *testing.B) {
	h := OpenRoomHistory(b.TempDir(), zap.NewNop())
	defer h.Close()
	lim := sessions.HistoryLimits{Count: 50, MaxBytes: 64 << 10}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		room := "agent:main:telegram:group:-" + strconv.Itoa(i%100)
		if _, err := h.Append(context.Background(), room, sessions.HistoryEntry{MessageID: strconv.Itoa(i), SenderName: "Ann",
			At: time.Now(), Text: benchText}, lim); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(h.Stats().Fsyncs)/float64(b.N), "fsyncs/msg")
}

// BenchmarkRoomHistoryAppendParallel keeps messages from many rooms at once
// (Discord events, several bots): concurrent appends share fsyncs.
func BenchmarkRoomHistoryAppendParallel(b *testing.B) {
	h := OpenRoomHistory(b.TempDir(), zap.NewNop())
	defer h.Close()
	lim := sessions.HistoryLimits{Count: 50, MaxBytes: 64 << 10}
	var n atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			room := "agent:main:discord:channel:" + strconv.Itoa(int(i%1000))
			if _, err := h.Append(context.Background(), room, sessions.HistoryEntry{MessageID: strconv.Itoa(int(i)), SenderName: "Ann",
				At: time.Now(), Text: benchText}, lim); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(h.Stats().Fsyncs)/float64(b.N), "fsyncs/msg")
}

// writeHistoryLog writes a log of rooms × per kept messages, as a daemon
// that ran a while leaves it.
func writeHistoryLog(tb testing.TB, dir string, rooms, per int) {
	tb.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, historyFile), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriter(f)
	var seq uint64
	at := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	for i := range per {
		for r := range rooms {
			seq++
			line, _ := encodeHistLine(histLine{Op: "add", Seq: seq, Room: fmt.Sprintf("agent:main:telegram:group:-100%07d", r),
				ID: strconv.FormatUint(seq, 10), From: "123456789", Name: "Some Person", At: at.Add(time.Duration(i) * time.Second),
				Text: benchText})
			_, _ = w.Write(line)
		}
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	_ = f.Close()
}

// heapInUse is the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// rssBytes is the process's resident set (Linux), 0 if unknown.
func rssBytes() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range bytes.Split(b, []byte("\n")) {
		if f := strings.Fields(string(l)); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb * 1024
		}
	}
	return 0
}

// TestRoomHistoryMemory: 1,000 rooms × 50 kept messages cost far less than
// 20 MB in memory (the texts stay on disk; only a compact index is kept).
func TestRoomHistoryMemory(t *testing.T) {
	dir := t.TempDir()
	writeHistoryLog(t, dir, 1000, 50)
	before := heapInUse()
	h := OpenRoomHistory(dir, zap.NewNop())
	defer h.Close()
	heap := heapInUse() - before
	if st := h.Stats(); st.Rooms != 1000 || st.Entries != 50000 {
		t.Fatalf("loaded %d rooms, %d entries", st.Rooms, st.Entries)
	}
	t.Logf("1000 rooms x 50 messages: %.1f MB heap, %.1f MB RSS", float64(heap)/(1<<20), rssBytes()/(1<<20))
	if heap > 20<<20 {
		t.Errorf("index takes %d bytes of heap, want <= 20 MB", heap)
	}
	runtime.KeepAlive(h)
}

// BenchmarkRoomHistoryMemory reports the heap and RSS of 1,000 rooms × 50
// kept messages, and the cost of a turn taking one room's history. rss-MB
// is the whole test process's resident set at the end (runtime, test binary
// and the rooms); rss-open-MB is what opening the rooms added to it, with
// freed memory returned to the OS before each reading.
func BenchmarkRoomHistoryMemory(b *testing.B) {
	dir := b.TempDir()
	writeHistoryLog(b, dir, 1000, 50)
	debug.FreeOSMemory()
	rss := rssBytes()
	before := heapInUse()
	h := OpenRoomHistory(dir, zap.NewNop())
	defer h.Close()
	heap := heapInUse() - before
	debug.FreeOSMemory()
	rss = rssBytes() - rss
	lim := sessions.HistoryLimits{Count: 50, MaxBytes: 64 << 10}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ents, err := h.Take(fmt.Sprintf("agent:main:telegram:group:-100%07d", i%1000), h.Seq(), lim)
		if err != nil || len(ents) != 50 {
			b.Fatalf("take: %d entries, %v", len(ents), err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(heap)/(1<<20), "heap-MB")
	b.ReportMetric(rssBytes()/(1<<20), "rss-MB")
	b.ReportMetric(rss/(1<<20), "rss-open-MB")
}
