package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gateway/gateway/channels/telegram"
)

// webhookConns is how many connections Telegram opens to a webhook at most
// (setWebhook's max_connections default): the poster's worker count.
const webhookConns = 40

// webhookJob is one update to post to one replica.
type webhookJob struct {
	raw    []byte
	target int
}

// webhookPoster plays Telegram in front of a load balancer: it posts
// updates to the replicas' webhook endpoints over at most webhookConns
// connections, one chat's updates in order on one worker, and posts an
// update again until it is answered 200, as Telegram does.
type webhookPoster struct {
	client  *http.Client
	urls    []string
	queues  []chan webhookJob
	wg      sync.WaitGroup
	retries atomic.Int64
	failed  atomic.Int64
}

// newWebhookPoster starts the workers; capacity bounds the updates queued
// per worker. Close must be called.
func newWebhookPoster(ctx context.Context, addrs []string, path string, capacity int) *webhookPoster {
	p := &webhookPoster{client: &http.Client{Timeout: 30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: webhookConns}}}
	for _, a := range addrs {
		p.urls = append(p.urls, "http://"+a+path)
	}
	for range webhookConns {
		q := make(chan webhookJob, capacity)
		p.queues = append(p.queues, q)
		p.wg.Go(func() {
			for j := range q {
				p.post(ctx, j)
			}
		})
	}
	return p
}

// Post queues raw (an update of chat) for replica target; it does not
// block while capacity holds.
func (p *webhookPoster) Post(ctx context.Context, chat int64, target int, raw []byte) {
	select {
	case p.queues[int(chat%webhookConns)] <- webhookJob{raw: raw, target: target}:
	case <-ctx.Done():
	}
}

// Close waits for every queued update to be posted (or given up).
func (p *webhookPoster) Close() {
	for _, q := range p.queues {
		close(q)
	}
	p.wg.Wait()
	p.client.CloseIdleConnections()
}

// post delivers j, again every 100 ms for up to 30 s while the replica
// answers anything but 200.
func (p *webhookPoster) post(ctx context.Context, j webhookJob) {
	for attempt := 0; ctx.Err() == nil; attempt++ {
		if attempt > 0 {
			p.retries.Add(1)
			if attempt > 300 {
				p.failed.Add(1)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		if p.postOnce(ctx, p.urls[j.target], j.raw) == nil {
			return
		}
	}
}

func (p *webhookPoster) postOnce(ctx context.Context, url string, raw []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(telegram.SecretHeader, webhookSecret)
	res, err := p.client.Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("webhook: %s", res.Status)
	}
	return nil
}

// replicaFor is the replica that receives update i of a run over chats
// chats. Round robin (byChat false) shifts by one every pass over the
// chats, so that one chat's consecutive messages land on different
// replicas, as behind a load balancer that knows nothing of chats (plain
// i mod n would pin every chat to one replica whenever n divides chats).
// byChat pins each chat to one replica (a balancer hashing on the chat):
// no session changes replica between turns.
func replicaFor(i, chats, n int, byChat bool) int {
	if byChat {
		return i % chats % n
	}
	return (i + i/chats) % n
}
