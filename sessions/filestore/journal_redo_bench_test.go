package filestore

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
)

// BenchmarkTurnAppend is a turn's transcript work (its input appended
// lazily, its reply durably) from 100 chats at once: "fsync" as a process
// without the journal does it (each reply fsyncs its transcript), "redo"
// as the daemon does (the journal holds the bytes; one fsync for every
// chat's reply of the moment).
//
//	go test -run '^$' -bench TurnAppend -benchmem ./sessions/filestore
func BenchmarkTurnAppend(b *testing.B) {
	for _, mode := range []string{"fsync", "redo"} {
		b.Run(mode, func(b *testing.B) {
			m := openTestManager(b, b.TempDir(), Options{})
			defer m.Close()
			var j *Journal
			if mode == "redo" {
				j = m.Journal()
			}
			s := mustStore(b, m, "main")
			const chats = 100
			trs := make([]*transcript.File, chats)
			ctx := context.Background()
			for i := range trs {
				e, _, err := s.Begin(ctx, dmKey(b, "main", fmt.Sprintf("p%d", i)), sessions.Origin{Channel: "telegram"})
				if err != nil {
					b.Fatal(err)
				}
				if trs[i], err = s.TranscriptOf(e); err != nil {
					b.Fatal(err)
				}
				// The first durable append of a file fsyncs it in either mode.
				if _, err := trs[i].Append(ctx, replyText("hello")); err != nil {
					b.Fatal(err)
				}
			}
			var before int64
			if j != nil {
				before = j.Stats().Fsyncs
			}
			var next atomic.Int64
			b.SetParallelism(chats / 2)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				tr := trs[next.Add(1)%chats]
				for pb.Next() {
					if _, err := tr.AppendLazy(ctx, sessions.UserText("what is the weather like today?", time.Now())); err != nil {
						b.Fatal(err)
					}
					if _, err := tr.Append(ctx, replyText("It is sunny, 21 degrees, a light wind from the west.")); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.StopTimer()
			if j != nil {
				b.ReportMetric(float64(j.Stats().Fsyncs-before)/float64(b.N), "journal_fsyncs/op")
			}
		})
	}
}
