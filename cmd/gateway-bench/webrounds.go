package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// webRounds runs rounds of new web chats (each a new session) at a fixed
// concurrency and reports each round's throughput and latency: session
// creation must not slow down as the index grows.
func webRounds(ctx context.Context, base string, rounds, perRound, concurrency int) error {
	client := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: concurrency}}
	var first float64
	for r := 1; r <= rounds; r++ {
		var (
			next   atomic.Int64
			failed atomic.Int64
			mu     sync.Mutex
			lat    []time.Duration
			wg     sync.WaitGroup
		)
		start := time.Now()
		for range concurrency {
			wg.Go(func() {
				for ctx.Err() == nil {
					i := next.Add(1)
					if i > int64(perRound) {
						return
					}
					t0 := time.Now()
					if err := webChat(ctx, client, base, fmt.Sprintf("round %d chat %d", r, i)); err != nil {
						failed.Add(1)
						continue
					}
					mu.Lock()
					lat = append(lat, time.Since(t0))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		tput := float64(len(lat)) / elapsed.Seconds()
		if r == 1 {
			first = tput
		}
		slices.Sort(lat)
		fmt.Printf("round=%d chats=%d failed=%d throughput=%.0f chats/s (%.0f%% of round 1) p50=%s p99=%s\n",
			r, len(lat), failed.Load(), tput, 100*tput/first, pct(lat, 50), pct(lat, 99))
		if failed.Load() > 0 {
			return fmt.Errorf("round %d: %d chats failed", r, failed.Load())
		}
	}
	return nil
}

// webChat posts one message as a new conversation and reads the SSE
// stream to its done event.
func webChat(ctx context.Context, client *http.Client, base, text string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/agents/main/chat",
		strings.NewReader(`{"message":"`+text+`"}`))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("chat: %s", res.Status)
	}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if sc.Text() == "event: done" {
			return nil
		}
	}
	return fmt.Errorf("chat: stream ended without done: %v", sc.Err())
}
