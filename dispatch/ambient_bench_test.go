package dispatch

import (
	"context"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions/filestore"
)

// BenchmarkAmbientRoom100Messages is the cost of an ambient room (issue
// 24) per 100 unaddressed messages, one op: 100 messages of a new room
// handed over as the Telegram poller does (acknowledged in batches of 100
// after one fsync), their batches run (the defaults: 20 messages or 30 s
// quiet) on a model that stays silent, until every batch settled.
// Reported: the model calls and the tokens they send (estimated from the
// requests: system prompt, tools, the session's history and the framed
// events), and the process CPU time, per 100 messages.
func BenchmarkAmbientRoom100Messages(b *testing.B) {
	m := &model{reply: func(llm.Request) (string, error) { return "", nil }}
	d, _ := newAmbientBench(b, m)
	ctx := context.Background()
	settled := func() int {
		n := 0
		for _, o := range []string{AmbientSilent, AmbientSpoke, AmbientHourlyCap, AmbientThrottled, AmbientEmpty, AmbientFailed} {
			n += int(testutil.ToFloat64(d.opts.Metrics.Ambient.WithLabelValues(o)))
		}
		return n
	}
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		chat := "-200" + strconv.Itoa(i)
		bctx, batch := channels.WithBatch(ctx)
		for j := 0; j < 100; j++ {
			in := channels.Inbound{Address: channels.Address{Channel: "tg", AccountID: "default", ChatID: chat},
				MessageID: strconv.Itoa(j), ChatType: channels.Group, SenderID: strconv.Itoa(7 + j%3), SenderName: "Ann",
				Text: benchLine, Time: time.Now()}
			if err := d.Handle(bctx, in); err != nil {
				b.Fatal(err)
			}
		}
		if err := batch.Wait(); err != nil {
			b.Fatal(err)
		}
		want := (i + 1) * 100 / channels.DefaultAmbientMaxBatch
		for settled() < want {
			time.Sleep(time.Millisecond)
		}
	}
	b.StopTimer()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	var tokens int64
	reqs := m.requests()
	for _, r := range reqs {
		tokens += llm.EstimateRequest(r)
	}
	cpu := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) * time.Nanosecond
	if n := testutil.ToFloat64(d.opts.Metrics.Ambient.WithLabelValues(AmbientFailed)); n > 0 {
		b.Fatalf("%v ambient turns failed", n)
	}
	b.ReportMetric(float64(len(reqs))/float64(b.N), "model_calls/100msgs")
	b.ReportMetric(float64(tokens)/float64(b.N), "input_tokens/100msgs")
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu_ms/100msgs")
}

// newAmbientBench is newBenchDispatcher's dispatcher with every group an
// ambient room (the defaults) and an agent on model m.
func newAmbientBench(b *testing.B, m *model) (*Dispatcher, *filestore.Manager) {
	mgr, err := filestore.Open(filestore.Options{StateDir: b.TempDir(), CacheTTL: -1})
	if err != nil {
		b.Fatal(err)
	}
	runner, err := agents.NewRunner(agents.Options{Sessions: mgr.Backend(), Providers: map[string]llm.Provider{"fake": m},
		Defaults: agents.Defaults{Model: agents.Model{Primary: "fake/m"}}, Agents: []agents.Agent{{ID: "main"}}})
	if err != nil {
		b.Fatal(err)
	}
	resolver, err := routing.NewResolver(routing.Config{})
	if err != nil {
		b.Fatal(err)
	}
	room := channels.DefaultRoom("telegram")
	room.Ambient.On, room.Ambient.PerHour = true, channels.MaxAmbientPerHour
	d, err := New(Options{Sessions: mgr.Backend(), StateDir: mgr.StateDir(), Runner: runner}, &Runtime{Resolver: resolver,
		Access: func(in channels.Inbound) Verdict {
			if in.ChatType != channels.Direct && !in.Mentioned {
				return Verdict{Reason: "not_mentioned", Unaddressed: true}
			}
			return Verdict{Allow: true, Privileged: true}
		},
		Room: func(channels.Inbound) channels.Room { return room },
	})
	if err != nil {
		b.Fatal(err)
	}
	d.Register(&chat{name: "tg"})
	if _, err := d.Resume(context.Background()); err != nil {
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
