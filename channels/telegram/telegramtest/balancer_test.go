package telegramtest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

// hookLog is the texts of the updates some webhook receivers accepted, in
// the order they accepted them.
type hookLog struct {
	mu    sync.Mutex
	got   []string
	hosts map[string]bool // Host headers seen
	// again counts updates accepted a second time: a target slower than
	// the balancer's timeout (a loaded machine) accepted one the balancer
	// then retried elsewhere, as Telegram itself redelivers an update
	// whose webhook call timed out (receivers drop repeats by update_id).
	again int
}

// hookTarget is a webhook receiver that counts the updates it accepted
// and records their text in log.
type hookTarget struct {
	log  *hookLog
	n    int  // guarded by log.mu
	fail bool // answer 500
	hang chan struct{}
}

func (h *hookTarget) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.hang != nil {
		select {
		case <-h.hang:
		case <-r.Context().Done():
		}
		return
	}
	if h.fail {
		http.Error(w, "down", http.StatusInternalServerError)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var u struct {
		Message struct {
			Text string `json:"text"`
		} `json:"message"`
	}
	_ = json.Unmarshal(body, &u)
	h.log.mu.Lock()
	if slices.Contains(h.log.got, u.Message.Text) {
		h.log.again++
	} else {
		h.log.got = append(h.log.got, u.Message.Text)
	}
	h.log.hosts[r.Host] = true
	h.n++
	h.log.mu.Unlock()
}

// TestBalancerSpreadsAndRetries: the balancer spreads updates over the
// healthy targets, retries what a failing (500) or hanging target did not
// accept elsewhere, and keeps one chat's updates in order.
func TestBalancerSpreadsAndRetries(t *testing.T) {
	srv := NewServer(Options{})
	defer srv.Close()
	srv.mu.Lock()
	srv.webhook = &Webhook{URL: "https://lb.example/hook", SecretToken: "s"}
	srv.mu.Unlock()
	log := &hookLog{hosts: map[string]bool{}}
	good1, good2, bad, hung := &hookTarget{log: log}, &hookTarget{log: log}, &hookTarget{fail: true}, &hookTarget{hang: make(chan struct{})}
	var urls []string
	for _, h := range []*hookTarget{good1, bad, good2, hung} {
		ts := httptest.NewServer(h)
		defer ts.Close()
		urls = append(urls, ts.URL)
	}
	defer close(hung.hang)

	const chats, per = 4, 10
	for n := range per {
		for c := range chats {
			srv.DM(int64(100+c), "c"+string(rune('a'+c))+" "+string(rune('A'+n)))
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := NewBalancer(srv, urls, BalancerOptions{Timeout: 200 * time.Millisecond, FailFor: time.Second, RetryAfter: 10 * time.Millisecond})
	errc := make(chan error, 1)
	go func() { errc <- b.Run(ctx) }()
	deadline := time.Now().Add(20 * time.Second)
	for srv.Pending() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-errc
	if n := srv.Pending(); n > 0 {
		t.Fatalf("%d updates still pending", n)
	}
	st := b.Stats()
	if st[0].Accepted == 0 || st[2].Accepted == 0 || st[0].Accepted+st[2].Accepted != chats*per {
		t.Errorf("accepted per target %+v, want all %d on the two healthy ones, both used", st, chats*per)
	}
	if st[1].Failed == 0 || st[3].Failed == 0 {
		t.Errorf("failures per target %+v: the failing and the hanging target were never tried", st)
	}
	if good1.n == 0 || good2.n == 0 {
		t.Errorf("accepted %d and %d: the updates were not spread over both healthy targets", good1.n, good2.n)
	}
	if len(log.hosts) != 1 || !log.hosts["lb.example"] {
		t.Errorf("Host headers %v, want the webhook URL's lb.example only", log.hosts)
	}
	// Per chat, the updates arrived in order across the targets (each
	// counted at its first acceptance).
	t.Logf("%d updates accepted again after a timeout", log.again)
	if len(log.got) != chats*per {
		t.Fatalf("%d updates accepted, want %d", len(log.got), chats*per)
	}
	last := map[byte]byte{}
	for _, s := range log.got {
		c, n := s[1], s[3]
		if n <= last[c] {
			t.Errorf("chat %c: %c accepted after %c", c, n, last[c])
		}
		last[c] = n
	}
}
