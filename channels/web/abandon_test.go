package web

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gateway/gateway/channels"
)

// TestRetryAttachedToAFailedRequestEnds: a request sent again with its
// requestId while the first copy is still being taken is attached to the
// first one's stream; when taking it then fails, the retry's stream ends
// with an error saying to send again (it waited forever: the log was
// dropped and nothing would ever finish it).
func TestRetryAttachedToAFailedRequestEnds(t *testing.T) {
	a := New(Options{})
	entered, release := make(chan struct{}), make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = a.Run(ctx, func(ctx context.Context, in channels.Inbound) error {
			close(entered)
			<-release
			return errors.New("journal append: disk full")
		})
	}()
	<-a.Accepting()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/agents/{id}/chat", a.ServeChat)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close(); cancel(); <-done })
	r := &rig{a: a, srv: srv}

	body := `{"message":"hi","requestId":"` + uuid.NewString() + `"}`
	firstDone := make(chan *http.Response, 1)
	go func() {
		res, err := http.Post(srv.URL+"/api/agents/main/chat", "application/json", strings.NewReader(body))
		if err != nil {
			firstDone <- nil
			return
		}
		res.Body.Close()
		firstDone <- res
	}()
	<-entered
	// A hang detector only: the retry's stream must end on its own.
	rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
	defer rcancel()
	retry := r.post(t, rctx, body)
	defer retry.res.Body.Close()
	if ev, ok := retry.next(t); !ok || ev.Name != "turn" {
		t.Fatalf("retry's first event %+v, want turn", ev)
	}
	close(release)
	if res := <-firstDone; res == nil || res.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("first request: %v, want 503", res)
	}
	var evs []sse
	for {
		line, err := retry.br.ReadString('\n')
		if err != nil {
			if rctx.Err() != nil {
				t.Fatalf("retry's stream never ended (events %v)", names(evs))
			}
			break
		}
		if name, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "event: "); ok {
			evs = append(evs, sse{Name: name})
		}
	}
	if strings.Join(names(evs), " ") != "error done" {
		t.Errorf("retry's stream after the failure: %v, want error done", names(evs))
	}
}
