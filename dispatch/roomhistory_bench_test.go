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
	return benchDispatcher(b, &model{}, Runtime{
		Access: func(in channels.Inbound) Verdict {
			if in.ChatType != channels.Direct && !in.Mentioned {
				return Verdict{Reason: "not_mentioned", Unaddressed: true}
			}
			return Verdict{Allow: true, Privileged: true}
		},
		Room: func(channels.Inbound) channels.Room { return channels.DefaultRoom("telegram") },
	})
}

// benchDispatcher is a dispatcher of the benchmarks on a new files state
// dir, with agent main on model m and the runtime rt (its resolver the
// default one); it is shut down and its store closed at the benchmark's
// end.
func benchDispatcher(b *testing.B, m llm.Provider, rt Runtime) (*Dispatcher, *filestore.Manager) {
	b.Helper()
	mgr, err := filestore.Open(filestore.Options{StateDir: b.TempDir(), CacheTTL: -1})
	if err != nil {
		b.Fatal(err)
	}
	runner, err := agents.NewRunner(agents.Options{Sessions: mgr.Backend(), Providers: map[string]llm.Provider{"fake": m},
		Defaults: agents.Defaults{Model: agents.Model{Primary: "fake/m"}}, Agents: []agents.Agent{{ID: "main"}}})
	if err != nil {
		b.Fatal(err)
	}
	if rt.Resolver, err = routing.NewResolver(routing.Config{}); err != nil {
		b.Fatal(err)
	}
	d, err := New(Options{Sessions: mgr.Backend(), StateDir: mgr.StateDir(), Runner: runner}, &rt)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		d.Shutdown(ctx)
		_ = mgr.Close()
	})
	return d, mgr
}
