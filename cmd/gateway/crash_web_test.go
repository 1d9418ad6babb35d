package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gateway/gateway/agents/openai/openaitest"
)

// The web crash test's traffic: webClients browsers, each with one session,
// send a message, follow its reply to the end (reconnecting as the page
// does) and send the next. Replies stream in webDeltas pieces webGap apart,
// so most kills land in the middle of one.
const (
	webClients = 8
	webDeltas  = 12
	webGap     = 25 * time.Millisecond
)

// webReply is the fake model's reply to marker m: unique per input, so a
// reply shown twice or cut short cannot pass for the right one.
func webReply(m string) string {
	var b strings.Builder
	for k := range webDeltas {
		fmt.Fprintf(&b, "%s part %02d. ", m, k)
	}
	return strings.TrimSpace(b.String())
}

// webTally counts what the web clients saw.
type webTally struct {
	sent, answered atomic.Int64
	resumes        atomic.Int64 // resume requests that got an answer
	wholes         atomic.Int64 // replies that came whole (a reply event)
	unsure         atomic.Int64 // posts cut off before their answer, sent again
	mu             sync.Mutex
	wrong          []string // guarded by mu: replies shown otherwise than once, whole
}

func (w *webTally) fail(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.wrong = append(w.wrong, fmt.Sprintf(format, args...))
}

// TestWebCrashReconnectingClientsLoseNothingShowNothingTwice runs the built
// daemon with the web chat under steady traffic and SIGKILLs it at random
// moments (at least 50 times, GATEWAY_CRASH_KILLS for more), restarting it
// on the same state dir and address. The clients do what the page does:
// follow each chat stream by its event ids and, when it breaks, ask for
// the turn again with Last-Event-ID until its done event. Every reply a
// client accepted a turn id for must then show exactly once, whole: no
// piece missing, none twice.
func TestWebCrashReconnectingClientsLoseNothingShowNothingTwice(t *testing.T) {
	seed := crashSeed(t)
	t.Logf("seed %d (GATEWAY_CRASH_SEED=%d replays this run)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	kills := 50
	if s := os.Getenv("GATEWAY_CRASH_KILLS"); s != "" {
		if v, err := strconv.Atoi(s); err == nil && v > kills {
			kills = v
		}
	}
	model := openaitest.NewServer(t)
	model.SetReply(func(_ int, r openaitest.Request) openaitest.Reply {
		return openaitest.Reply{Text: webReply(r.LastUserText()), Deltas: webDeltas, Gap: webGap}
	})
	base := t.TempDir()
	d := &crashDaemon{t: t, addr: freeAddr(t), logs: filepath.Join(base, "logs")}
	if err := os.MkdirAll(d.logs, 0o700); err != nil {
		t.Fatal(err)
	}
	d.cfg = filepath.Join(d.logs, "gateway.yaml")
	cfg := fmt.Sprintf(`stateDir: %s
http: {listen: %q}
log: {level: info, format: console}
providers:
  fake: {type: openai, baseURL: %q, apiKey: test-key, maxRetries: 1}
agents:
  defaults: {model: fake/test-model, maxConcurrent: 8}
  list: [{id: main}]
messages:
  queue: {mode: followup, debounce: 0s}
  delivery: {maxCrashes: 100}
`, filepath.Join(base, "state"), d.addr, model.BaseURL())
	if err := os.WriteFile(d.cfg, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	d.start()
	defer d.stop()

	var tally webTally
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var next atomic.Int64
	for c := range webClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			webClient(t, "http://"+d.addr, c, &next, &tally, stop)
		}()
	}
	begin := time.Now()
	for k := range kills {
		time.Sleep(time.Duration(150+rng.IntN(600)) * time.Millisecond)
		d.kill()
		if k%10 == 9 {
			t.Logf("%d kills, %d messages sent, %d answered", k+1, tally.sent.Load(), tally.answered.Load())
		}
		d.start()
	}
	close(stop) // each client ends once its turn in hand is done
	wg.Wait()
	t.Logf("%d kills in %s: %d messages sent, %d answered; %d resume requests answered, %d replies whole from durable state; %d posts cut off before their answer and sent again",
		kills, time.Since(begin).Round(time.Second), tally.sent.Load(), tally.answered.Load(), tally.resumes.Load(),
		tally.wholes.Load(), tally.unsure.Load())
	for _, w := range tally.wrong {
		t.Error(w)
	}
	if got, want := tally.answered.Load(), tally.sent.Load(); got != want {
		t.Errorf("%d replies shown whole for %d messages sent: %d lost", got, want, want-got)
	}
}

// webSettleCap bounds one turn's wait for its reply across restarts.
const webSettleCap = 3 * time.Minute

// webClient is one browser: one session, one message at a time.
func webClient(t *testing.T, base string, c int, next *atomic.Int64, tally *webTally, stop <-chan struct{}) {
	client := &http.Client{}
	session := ""
	for {
		select {
		case <-stop:
			return
		default:
		}
		m := fmt.Sprintf("w%dm%d", c, next.Add(1))
		body, _ := json.Marshal(map[string]string{"message": m, "sessionId": session, "requestId": uuid.NewString()})
		res := postUntilAnswered(client, base, body, tally, stop)
		if res == nil {
			return // stopped before the message was sent, or refused (a failure)
		}
		v := webView{turn: res.Header.Get("X-Turn-Id")}
		v.read(res.Body)
		res.Body.Close()
		for deadline := time.Now().Add(webSettleCap); !v.done; {
			if time.Now().After(deadline) {
				tally.fail("%s (turn %s): no reply within %s of resuming (last event %q)", m, v.turn, webSettleCap, v.last)
				return
			}
			code := v.resume(client, base)
			switch {
			case code == http.StatusOK || code == http.StatusNoContent:
				tally.resumes.Add(1)
			case code >= 400 && code < 500:
				tally.fail("%s (turn %s): resume answered %d: lost", m, v.turn, code)
				return
			default:
				time.Sleep(20 * time.Millisecond) // down or starting
			}
		}
		if v.whole {
			tally.wholes.Add(1)
		}
		if v.shown != webReply(m) || v.errors != 0 {
			tally.fail("%s (turn %s): shown %q with %d errors, want %q once", m, v.turn, v.shown, v.errors, webReply(m))
			return
		}
		tally.answered.Add(1)
		session = v.session
	}
}

// postUntilAnswered posts a chat message as the page does: sent again with
// the same request id while no answer comes (a post cut off may have been
// taken: the retry is then answered with that turn's stream), and while
// the daemon starts. It counts the message sent at its first post that
// may have reached the daemon; nil when stop came before that.
func postUntilAnswered(client *http.Client, base string, body []byte, tally *webTally, stop <-chan struct{}) *http.Response {
	counted := false
	for deadline := time.Now().Add(webSettleCap); ; {
		if time.Now().After(deadline) {
			tally.fail("chat %s: no answer within %s", body, webSettleCap)
			return nil
		}
		res, err := client.Post(base+"/api/agents/main/chat", "application/json", bytes.NewReader(body))
		if !counted && (err == nil || !errors.Is(err, syscall.ECONNREFUSED)) {
			tally.sent.Add(1)
			counted = true
		}
		if err == nil && res.StatusCode == http.StatusOK {
			return res
		}
		if err == nil {
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode >= 400 && res.StatusCode < 500 {
				tally.fail("chat %s refused: %d %s", body, res.StatusCode, b)
				return nil
			}
		} else if !errors.Is(err, syscall.ECONNREFUSED) {
			tally.unsure.Add(1) // cut off: sent again
		}
		if !counted {
			select {
			case <-stop:
				return nil
			default:
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// webView is what the page shows of one turn, built as app.js builds it.
type webView struct {
	turn, last, shown, session string
	errors                     int
	done, whole                bool
}

// read applies the events of one stream until it ends or breaks.
func (v *webView) read(body io.Reader) {
	br := bufio.NewReader(body)
	var id, name, data string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case strings.HasPrefix(line, "event: "):
			name = line[7:]
		case strings.HasPrefix(line, "data: "):
			data = line[6:]
		case line == "" && name != "":
			v.apply(id, name, data)
			id, name, data = "", "", ""
		}
	}
}

func (v *webView) apply(id, name, data string) {
	if id != "" {
		v.last = id
	}
	var d struct {
		Text      string `json:"text"`
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal([]byte(data), &d)
	switch name {
	case "delta":
		v.shown += d.Text
	case "reply":
		v.shown, v.whole = d.Text, true
	case "error":
		v.errors++
	case "done":
		v.done, v.session = true, d.SessionID
	}
}

// resume asks for the rest of the turn once and returns the status (0
// when the daemon did not answer).
func (v *webView) resume(client *http.Client, base string) int {
	req, _ := http.NewRequest("GET", base+"/api/agents/main/chat/turns/"+v.turn, nil)
	req.Header.Set("Accept", "text/event-stream")
	if v.last != "" {
		req.Header.Set("Last-Event-ID", v.last)
	}
	res, err := client.Do(req)
	if err != nil {
		return 0
	}
	defer res.Body.Close()
	switch res.StatusCode {
	case http.StatusOK:
		v.read(res.Body)
	case http.StatusNoContent:
		v.done = true
	}
	return res.StatusCode
}
