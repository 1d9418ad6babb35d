package dispatch

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions/filestore"
)

// BenchmarkHandleUnmentioned is the dispatcher's cost of keeping one
// unaddressed group message (access verdict, route, room history write),
// handed over as the Telegram poller does: in batches of up to 100 whose
// acknowledgement waits for one fsync.
func BenchmarkHandleUnmentioned(b *testing.B) {
	d, mgr := newBenchDispatcher(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; {
		bctx, batch := channels.WithBatch(ctx)
		for j := 0; j < 100 && i < b.N; j, i = j+1, i+1 {
			in := channels.Inbound{Address: channels.Address{Channel: "tg", AccountID: "default", ChatID: "-100" + strconv.Itoa(i%100)}, MessageID: strconv.Itoa(i), ChatType: channels.Group, SenderID: "7", SenderName: "Ann",
				Text: benchLine, Time: time.Now()}
			if err := d.Handle(bctx, in); err != nil {
				b.Fatal(err)
			}
		}
		if err := batch.Wait(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	st := mgr.History().Stats()
	b.ReportMetric(float64(st.Fsyncs)/float64(b.N), "fsyncs/msg")
}

const benchLine = "so what do we think about the release plan so what do we think about the release plan"

// newBenchDispatcher is a dispatcher whose access policy admits group
// messages without a mention only as room history (as the real one does).
func newBenchDispatcher(b *testing.B) (*Dispatcher, *filestore.Manager) {
	mgr, err := filestore.Open(filestore.Options{StateDir: b.TempDir(), CacheTTL: -1})
	if err != nil {
		b.Fatal(err)
	}
	runner, err := agents.NewRunner(agents.Options{Sessions: mgr.Backend(), Providers: map[string]llm.Provider{"fake": &model{}},
		Defaults: agents.Defaults{Model: agents.Model{Primary: "fake/m"}}, Agents: []agents.Agent{{ID: "main"}}})
	if err != nil {
		b.Fatal(err)
	}
	resolver, err := routing.NewResolver(routing.Config{})
	if err != nil {
		b.Fatal(err)
	}
	d, err := New(Options{Sessions: mgr.Backend(), StateDir: mgr.StateDir(), Runner: runner}, &Runtime{Resolver: resolver,
		Access: func(in channels.Inbound) Verdict {
			if in.ChatType != channels.Direct && !in.Mentioned {
				return Verdict{Reason: "not_mentioned", Unaddressed: true}
			}
			return Verdict{Allow: true, Privileged: true}
		},
		Room: func(channels.Inbound) channels.Room { return channels.DefaultRoom("telegram") },
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		d.Shutdown(ctx)
		_ = mgr.Close()
	})
	return d, mgr
}
