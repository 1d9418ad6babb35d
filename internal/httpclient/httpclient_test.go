package httpclient

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// TestNewReusesConnections makes 16 calls at once, twice: the
// second round finds the first round's connections idle (net/http's
// default client keeps 2 per host and dials 14 again).
func TestNewReusesConnections(t *testing.T) {
	const calls = 16
	var dialled atomic.Int64
	var arrived sync.WaitGroup
	var mu sync.Mutex // guards release
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		r := release
		mu.Unlock()
		arrived.Done()
		<-r // every call of a round is in flight at once
		_, _ = io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dialled.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	client := New()
	for round := range 2 {
		arrived.Add(calls)
		mu.Lock()
		r := make(chan struct{})
		release = r
		mu.Unlock()
		var done sync.WaitGroup
		for range calls {
			done.Add(1)
			go func() {
				defer done.Done()
				resp, err := client.Get(srv.URL)
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}()
		}
		arrived.Wait()
		close(r)
		done.Wait()
		if got := dialled.Load(); got != calls {
			t.Fatalf("after round %d: %d connections dialled, want %d", round+1, got, calls)
		}
	}
}
