package gatewayd

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// TestReplicaTakesOverStoppedReplicasWork: two daemons on one database,
// the fake Telegram in polling mode, DMs all along, some of them slow to
// answer. b starts while a runs turns (it must not resume them: a lives);
// then a stops without releasing its leases, its slow turns cut at the
// grace period. b, still running, takes over what a left (no new start),
// becomes the poller once a's lease expires, and every DM is answered
// exactly once.
func TestReplicaTakesOverStoppedReplicasWork(t *testing.T) {
	url := pgtest.NewDatabase(t)
	tg := telegramtest.Start(t, telegramtest.Options{})
	// a's model takes a minute over every fourth DM, far past the 5 s
	// grace of a stop, so a's slow turns are always cut, however loaded
	// the machine (a turn that ends at the grace's last instant may send
	// a chunk whose Sent mark is not written: the documented window of a
	// stop, which a model as slow as the grace made this test hit).
	// b's model answers at once.
	slowModel, model := openaitest.NewServer(t), openaitest.NewServer(t)
	slowModel.SetReply(func(n int, r openaitest.Request) openaitest.Reply {
		text := r.LastUserText()
		rep := openaitest.Reply{Text: "reply: " + text, Delay: 200 * time.Millisecond}
		if k, err := strconv.Atoi(strings.TrimPrefix(text, "m")); err == nil && k%4 == 0 {
			rep.Delay = time.Minute
		}
		return rep
	})
	model.SetReply(func(n int, r openaitest.Request) openaitest.Reply {
		return openaitest.Reply{Text: "reply: " + r.LastUserText(), Delay: 200 * time.Millisecond}
	})
	rec := &polls{}
	yaml := func(who string, m *openaitest.Server) string {
		return replicaConfig(filepath.Join(t.TempDir(), who), tg, m, url)
	}

	var sent atomic.Int32
	injectCtx, stopInject := context.WithCancel(context.Background())
	defer stopInject()
	injected := make(chan struct{})
	go func() {
		defer close(injected)
		for injectCtx.Err() == nil {
			n := sent.Add(1)
			tg.DM(int64(7000+n), fmt.Sprintf("m%d", n))
			select {
			case <-injectCtx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()

	a := startReplica(t, "a", yaml("a", slowModel), url, rec, true)
	waitUntil(t, 10*time.Second, "a polls", func() bool { return !rec.firstBy("a", time.Time{}).IsZero() })
	time.Sleep(1500 * time.Millisecond) // a runs turns, slow ones among them
	b := startReplica(t, "b", yaml("b", model), url, rec, false)
	if n := replayed(t, b.addr); n != 0 {
		t.Fatalf("b resumed %v records at its start while their owner a ran", n)
	}
	time.Sleep(1500 * time.Millisecond)
	a.stop(t) // cuts a's slow turns after the grace; its leader lease stays
	time.Sleep(2 * time.Second)
	stopInject()
	<-injected
	total := int(sent.Load())

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := tg.WaitSent(ctx, total); err != nil {
		t.Errorf("%d replies of %d DMs: %v", tg.SentCount(), total, err)
	}
	time.Sleep(time.Second) // a duplicate would come now
	count := map[string]int{}
	for _, s := range tg.Sent() {
		count[s.Text]++
	}
	for n := 1; n <= total; n++ {
		if c := count[fmt.Sprintf("reply: m%d", n)]; c != 1 {
			t.Errorf("m%d answered %d times", n, c)
		}
	}
	if len(tg.Sent()) != total {
		t.Errorf("%d messages sent for %d DMs", len(tg.Sent()), total)
	}
	// What a left was taken over by b while it ran.
	if n := replayed(t, b.addr); n == 0 {
		t.Errorf("b resumed no record of a's: the test did not exercise the take-over")
	} else {
		t.Logf("%d DMs; b took over %v records a left", total, n)
	}
}

var replayedLine = regexp.MustCompile(`(?m)^gateway_ingress_replayed_total(?:\{[^}]*\})? ([0-9.e+]+)$`)

// replayed is a daemon's gateway_ingress_replayed_total.
func replayed(t *testing.T, addr string) float64 {
	t.Helper()
	m := replayedLine.FindStringSubmatch(scrape(t, addr))
	if m == nil {
		t.Fatalf("no gateway_ingress_replayed_total in %s's /metrics", addr)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
