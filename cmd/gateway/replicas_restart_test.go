package main

import (
	"testing"
	"time"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// The server restart run, as offsets from the start of the traffic.
const (
	restartStopAt     = 6 * time.Second // pg_ctl stop -m fast
	restartDown       = 5 * time.Second // then pg_ctl start
	restartTrafficFor = 20 * time.Second
)

// TestReplicasSurviveServerRestart (issues 12 and 13): two replicas of the
// built binary on a PostgreSQL server of the test's own, the fake Telegram
// posting webhook updates round-robin through the Balancer, under steady
// traffic over 15 chats; the server is restarted for real (pg_ctl stop -m
// fast: every session ended, its transactions rolled back, the socket
// gone; 5 s later pg_ctl start), not only cut off as the shared server's
// outage tests do. Every replica recovers by itself: each is ready again,
// accepts webhook updates after the restart, and from the fake's record
// no input is lost, none is answered by two replies, no chunk is
// delivered twice, replies and the model keep each chat's order, the
// model never has two turns of one session in flight, and the transcripts
// hold each input once.
func TestReplicasSurviveServerRestart(t *testing.T) {
	srv := pgtest.StartServer(t)
	url := srv.URL("postgres")
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	rm := newReplicaModel(model)
	reps := []*replica{newReplica(t, 1, tg, model, url), newReplica(t, 2, tg, model, url)}
	var hooks []string
	for _, r := range reps {
		hooks = append(hooks, r.hook())
	}
	t.Cleanup(func() {
		for _, r := range reps {
			r.stop()
		}
		if t.Failed() {
			for _, r := range reps {
				t.Logf("%s's log about the database:\n%s", r.tag,
					grepLines(r.log(r.tag), 40, "postgres", "database", "storage", "unavailable", "lease"))
			}
			t.Logf("the server's log:\n%s", tail(srv.Log(), 40))
		}
	})
	for _, r := range reps {
		r.start()
	}
	waitFor(t, 20*time.Second, "the webhook registered", func() bool { _, ok := tg.Webhook(); return ok })

	bal, stopBal := runBalancer(t, tg, hooks, telegramtest.BalancerOptions{Timeout: 2 * time.Second, FailFor: time.Second})

	tr := startReplicaTraffic(tg)
	time.Sleep(time.Until(tr.begin.Add(restartStopAt)))
	srv.Stop()
	t.Logf("%s: server stopped", since(tr.begin))
	time.Sleep(restartDown)
	srv.Start()
	t.Logf("%s: server started", since(tr.begin))
	afterRestart := bal.Stats()
	for _, r := range reps {
		if !r.waitReady(30 * time.Second) {
			t.Errorf("%s not ready within 30 s of the server's start", r.tag)
		}
	}
	time.Sleep(time.Until(tr.begin.Add(restartTrafficFor)))
	sentPer, queuedAt := tr.stop()
	total := 0
	for _, n := range sentPer {
		total += n
	}

	none := replicaFaults{killed: map[string]bool{}}
	rep := awaitReplies(tg, sentPer, queuedAt, none)
	logStuck(t, url, reps, rep.lost)
	stopBal()
	stats := bal.Stats()
	rep = checkReplies(tg, sentPer, queuedAt, none)
	for i, r := range reps {
		if n := stats[i].Accepted - afterRestart[i].Accepted; n == 0 {
			t.Errorf("%s accepted no webhook update after the restart (balancer: %+v)", r.tag, stats[i])
		}
	}
	t.Logf("%d messages, %d replies, webhook deliveries per replica %+v", total, rep.replies, stats)
	logLatency(t, rep.latency, queuedAt, map[string]time.Time{"restart": tr.begin.Add(restartStopAt)})
	problems(t, "inputs never answered", rep.lost)
	problems(t, "inputs answered twice", rep.twice)
	problems(t, "chunks delivered twice", rep.outside)
	problems(t, "replies out of order", rep.order)
	problems(t, "other messages to the chats (notices, refusals)", rep.notices)
	checkModel(t, rm, model, nil)

	for _, r := range reps {
		r.stop()
	}
	n, bad := checkReplicaTranscripts(t, reps[1].cfgPath(), sentPer)
	problems(t, "transcript problems", bad)
	t.Logf("%d transcripts checked; the run took %s", n, since(tr.begin))
}
