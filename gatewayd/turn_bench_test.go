package gatewayd

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// BenchmarkTurnFiles measures the whole per-message path of the daemon on
// the files backend, as cmd/gateway-bench drives it (issue 21): a
// Telegram DM long-polled from the fake Bot API, accepted into the ingress
// journal, run as its own turn (followup queue, no burst assembly) by the
// offline echo provider, its reply stored in the outbox, sent to the fake
// and marked. The messages of an op go out at once, spread round robin
// over 100 chats whose sessions exist already (one message each before the
// timer), and the op ends when every reply has reached the fake.
//
// The fake Bot API runs in this process: its HTTP serving and JSON count
// in ns/op, B/op, allocs/op and cpu-ns/op as well (a constant share per
// message: about 150 of the allocations). cpu-ns/op is the process's CPU
// per message on all cores; ns/op is the burst's wall time per message.
// Run with a fixed count to compare allocations between commits:
//
//	go test -run '^$' -bench BenchmarkTurnFiles -benchmem -benchtime 3000x -count 3 ./gatewayd
func BenchmarkTurnFiles(b *testing.B) {
	benchmarkTurn(b, "")
}

// BenchmarkTurnPostgres is BenchmarkTurnFiles on the postgres backend, on
// a fresh database of the server GATEWAY_TEST_POSTGRES_URL names (skipped
// without it). cpu-ns/op is this process's CPU only: the PostgreSQL
// server's work for a message is not in it.
//
//	go test -run '^$' -bench BenchmarkTurnPostgres -benchmem -benchtime 2000x -count 3 ./gatewayd
func BenchmarkTurnPostgres(b *testing.B) {
	if os.Getenv(pgtest.EnvURL) == "" {
		b.Skip(pgtest.EnvURL + " is not set: export it (./scripts/postgres prints one) to measure the postgres backend")
	}
	benchmarkTurn(b, fmt.Sprintf("storage: {backend: postgres, postgres: {url: %q}}\n", pgtest.NewDatabase(b)))
}

// benchmarkTurn runs the per-message benchmark on the daemon configured by
// storage (a YAML storage section; empty for the default, files).
func benchmarkTurn(b *testing.B, storage string) {
	const chats = 100
	var replies, want atomic.Int64
	done := make(chan struct{}, 1)
	tg := telegramtest.Start(b, telegramtest.Options{OnSent: func(m telegramtest.Sent, _ time.Time) {
		if m.Method == "sendMessage" && strings.HasPrefix(m.Text, "echo: m") && replies.Add(1) == want.Load() {
			done <- struct{}{}
		}
	}})
	cfg := testConfig(b, storage+fmt.Sprintf(`http: {listen: "127.0.0.1:0"}
channels:
  telegram:
    accounts:
      default: {token: %q, apiRoot: %q, dmPolicy: open, allowFrom: ["*"]}
providers: {local: {type: echo}}
agents: {defaults: {model: local/echo, maxConcurrent: 8}, list: [{id: main}]}
messages:
  queue: {mode: followup, cap: 1000}
  inbound: {byChannel: {telegram: {}}}   # one turn per message: no burst assembly
`, tg.Token(), tg.URL))
	runTestDaemon(b, cfg, Options{Logger: zap.NewNop()})
	sent := 0
	burst := func(n int) {
		want.Store(int64(sent + n))
		for range n {
			tg.DM(int64(10000+sent%chats), "m"+strconv.Itoa(sent))
			sent++
		}
		select {
		case <-done:
		case <-time.After(5*time.Minute + time.Duration(n)*10*time.Millisecond):
			b.Fatalf("%d of %d replies", replies.Load(), sent)
		}
	}
	burst(chats) // the sessions exist before the timer starts
	b.ReportAllocs()
	cpu := processCPU(b)
	b.ResetTimer()
	burst(b.N)
	b.StopTimer()
	// The process's CPU (both cores, the fake's share included) per message.
	b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
	if got := replies.Load(); got != int64(sent) {
		b.Fatalf("%d replies to %d messages", got, sent)
	}
}

// processCPU is the CPU time this process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
