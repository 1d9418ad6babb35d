package telegramtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	neturl "net/url"
	"strconv"
	"sync"
	"time"
)

// BalancerOptions configure a Balancer; zero fields take the defaults.
type BalancerOptions struct {
	// Timeout bounds one delivery attempt (default 2 s): a target that
	// does not answer in time (a stopped process) counts as failed.
	Timeout time.Duration
	// FailFor is how long a target that failed is passed over (default
	// 2 s), as a load balancer's passive health check does; when every
	// target is passed over, the least recently failed one is tried.
	FailFor time.Duration
	// RetryAfter is how long a failed update waits before its next
	// attempt (default 100 ms).
	RetryAfter time.Duration
	// MaxInFlight bounds the deliveries under way at once (default 8).
	MaxInFlight int
}

func (o BalancerOptions) withDefaults() BalancerOptions {
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	if o.FailFor <= 0 {
		o.FailFor = 2 * time.Second
	}
	if o.RetryAfter <= 0 {
		o.RetryAfter = 100 * time.Millisecond
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 8
	}
	return o
}

// Attempt is one delivery attempt of an update.
type Attempt struct {
	UpdateID int
	Target   int // index in the targets
	Start    time.Time
	Took     time.Duration
	Err      string // "" when the target answered 200
}

// TargetStats is what a Balancer did with one target.
type TargetStats struct {
	Accepted int // updates the target answered 200
	Failed   int // attempts that failed: an error, a timeout or another status
}

// Balancer delivers the Server's pending updates to several webhook targets
// (replicas of a daemon) round-robin, as Telegram posting to a load
// balancer in front of them would look to the replicas. An update
// answered 200 is confirmed; one that fails is retried on the next
// target. The updates of one chat go one at a time, in update order (each
// waits for the one before it to be confirmed); different chats go in
// parallel. Create it with NewBalancer and call Run.
type Balancer struct {
	s       *Server
	targets []string
	opts    BalancerOptions
	client  *http.Client

	mu       sync.Mutex // guards the fields below
	next     int
	downTill []time.Time
	stats    []TargetStats
	notAfter map[int]time.Time // update id -> no attempt before
	attempts []Attempt
}

// NewBalancer returns a Balancer of s over targets (full webhook URLs).
func NewBalancer(s *Server, targets []string, opts BalancerOptions) *Balancer {
	opts = opts.withDefaults()
	return &Balancer{s: s, targets: append([]string(nil), targets...), opts: opts,
		client:   &http.Client{Timeout: opts.Timeout, Transport: &http.Transport{DisableKeepAlives: true}},
		downTill: make([]time.Time, len(targets)), stats: make([]TargetStats, len(targets)),
		notAfter: map[int]time.Time{}}
}

// Stats returns what the balancer did with each target, in target order.
func (b *Balancer) Stats() []TargetStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]TargetStats(nil), b.stats...)
}

// Attempts returns every delivery attempt so far, in the order they
// ended.
func (b *Balancer) Attempts() []Attempt {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Attempt(nil), b.attempts...)
}

// Run delivers pending updates until ctx ends; it waits for the
// deliveries under way before it returns ctx's error.
func (b *Balancer) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	done := make(chan int, b.opts.MaxInFlight)
	busyChat := map[string]bool{}
	inFlight := map[int]string{} // update id -> chat
	tick := time.NewTicker(b.opts.RetryAfter / 2)
	defer tick.Stop()
	for {
		b.s.mu.Lock()
		pend := append([]pending(nil), b.s.updates...)
		changed := b.s.changed
		b.s.mu.Unlock()
		seen := map[string]bool{}
		now := time.Now()
		for _, u := range pend {
			if len(inFlight) >= b.opts.MaxInFlight {
				break
			}
			chat := updateChat(u)
			first := !seen[chat]
			seen[chat] = true
			if _, ok := inFlight[u.id]; ok || !first || busyChat[chat] || now.Before(b.waitUntil(u.id)) {
				continue
			}
			busyChat[chat] = true
			inFlight[u.id] = chat
			wg.Add(1)
			go func(u pending) {
				defer wg.Done()
				b.deliver(ctx, u)
				done <- u.id
			}(u)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-b.s.done:
			return http.ErrServerClosed
		case id := <-done:
			delete(busyChat, inFlight[id])
			delete(inFlight, id)
		case <-changed:
		case <-tick.C:
		}
	}
}

func (b *Balancer) waitUntil(id int) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.notAfter[id]
}

// pick is the next target round-robin, passing over failed ones.
func (b *Balancer) pick() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	best := -1
	for k := range b.targets {
		i := (b.next + k) % len(b.targets)
		if !now.Before(b.downTill[i]) {
			best = i
			break
		}
		if best < 0 || b.downTill[i].Before(b.downTill[best]) {
			best = i
		}
	}
	b.next = (best + 1) % len(b.targets)
	return best
}

// deliver makes one attempt to post u; a 200 confirms it.
func (b *Balancer) deliver(ctx context.Context, u pending) {
	i := b.pick()
	start := time.Now()
	err := b.post(ctx, b.targets[i], u.raw)
	ok := err == nil
	b.mu.Lock()
	a := Attempt{UpdateID: u.id, Target: i, Start: start, Took: time.Since(start)}
	if err != nil {
		a.Err = err.Error()
	}
	b.attempts = append(b.attempts, a)
	if ok {
		b.stats[i].Accepted++
		delete(b.notAfter, u.id)
	} else if ctx.Err() == nil {
		b.stats[i].Failed++
		b.downTill[i] = time.Now().Add(b.opts.FailFor)
		b.notAfter[u.id] = time.Now().Add(b.opts.RetryAfter)
	}
	b.mu.Unlock()
	if ok {
		b.s.confirm(u.id)
	}
}

func (b *Balancer) post(ctx context.Context, target string, raw json.RawMessage) error {
	wh, _ := b.s.Webhook()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Telegram-Bot-Api-Secret-Token", wh.SecretToken)
	// A proxy that keeps the Host Telegram asked for: the registered
	// webhook URL's, not the target's.
	if u, err := neturl.Parse(wh.URL); err == nil && u.Host != "" {
		req.Host = u.Host
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("telegramtest: webhook %s: status %d", target, resp.StatusCode)
	}
	return nil
}

// confirm forgets update id, acknowledged by a webhook.
func (s *Server) confirm(id int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, u := range s.updates {
		if u.id == id {
			s.updates = append(s.updates[:i:i], s.updates[i+1:]...)
			break
		}
	}
	s.confirmed = max(s.confirmed, id+1)
	s.notifyLocked()
}

// updateChat is the chat of a message update, or a key of its own for
// any other update.
func updateChat(u pending) string {
	var v struct {
		Message       *struct{ Chat struct{ ID int64 } } `json:"message"`
		EditedMessage *struct{ Chat struct{ ID int64 } } `json:"edited_message"`
	}
	if json.Unmarshal(u.raw, &v) == nil {
		switch {
		case v.Message != nil:
			return strconv.FormatInt(v.Message.Chat.ID, 10)
		case v.EditedMessage != nil:
			return strconv.FormatInt(v.EditedMessage.Chat.ID, 10)
		}
	}
	return "update:" + strconv.Itoa(u.id)
}
