package pgstore

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
)

// roomBenchText is a typical chat line (about 100 bytes), as the files
// benchmark uses.
var roomBenchText = strings.Repeat("so what do we think about the release plan ", 2)

// BenchmarkRoomLogAppend keeps unaddressed messages one after another
// across 100 rooms (filestore.BenchmarkRoomHistoryAppend on PostgreSQL):
// each is committed when Append returns.
func BenchmarkRoomLogAppend(b *testing.B) {
	h := openBench(b, 4).RoomLog(RoomLogOptions{})
	lim := sessions.HistoryLimits{Count: 50, MaxBytes: 64 << 10}
	ctx := context.Background()
	var lat []time.Duration
	i := 0
	for b.Loop() {
		room := "agent:main:telegram:group:-" + strconv.Itoa(i%100)
		start := time.Now()
		if _, err := h.Append(ctx, room, sessions.HistoryEntry{MessageID: strconv.Itoa(i), SenderName: "Ann",
			At: time.Now(), Text: roomBenchText}, lim); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		i++
	}
	reportLatency(b, lat)
}

// BenchmarkRoomLogAppendParallel appends from 16 goroutines per CPU to
// 1000 rooms at once.
func BenchmarkRoomLogAppendParallel(b *testing.B) {
	h := openBench(b, 16).RoomLog(RoomLogOptions{})
	lim := sessions.HistoryLimits{Count: 50, MaxBytes: 64 << 10}
	var n atomic.Int64
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			room := "agent:main:discord:channel:" + strconv.Itoa(int(i%1000))
			if _, err := h.Append(context.Background(), room, sessions.HistoryEntry{MessageID: strconv.Itoa(int(i)),
				SenderName: "Ann", At: time.Now(), Text: roomBenchText}, lim); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
