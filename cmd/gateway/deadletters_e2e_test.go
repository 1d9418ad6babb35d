package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/gatewayd"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// TestDeadLettersFiles and TestDeadLettersPostgres: on each backend, a
// reply Telegram refuses every time is given up and listed with its
// reason by `gateway deliveries list --failed`; two `deliveries resubmit`
// processes at once send it once; a discarded letter is gone.
func TestDeadLettersFiles(t *testing.T) { testDeadLetters(t, "") }

func TestDeadLettersPostgres(t *testing.T) { testDeadLetters(t, pgStorage(pgtest.NewDatabase(t))) }

func testDeadLetters(t *testing.T, storage string) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	state := filepath.Join(t.TempDir(), "state")
	must(t, os.MkdirAll(state, 0o700))
	addr := startFromFile(t, writeYAML(t, e2eConfig(state, tg, model)+storage))
	cfg := writeConfig(t, state, addr, storage)

	// A refusal (403) is given up at once: the chunk is asked once.
	blocked := func() { tg.FailNext("sendMessage", telegramtest.Failure{Code: 403}) }
	blocked()
	tg.DM(111, "nobody hears this")
	l := waitLetter(t, cfg, "nobody hears this")
	if l.Kind != sessions.DeadReply || l.State != sessions.DeadFailed || !strings.Contains(l.Reason, "blocked by the user") ||
		l.Reply == nil || l.Reply.Sent != 0 || l.At.IsZero() {
		t.Fatalf("dead letter %+v", l)
	}
	if r := gw(t, cfg, "deliveries", "list", "--failed").want(t, 0); !strings.Contains(r.Stdout, l.ID) || !strings.Contains(r.Stdout, "reply") {
		t.Errorf("list --failed:\n%s", r.Stdout)
	}
	gw(t, cfg, "deliveries", "list").want(t, 2) // --failed is what it lists
	st, _ := waitStatus(t, cfg, "one dead letter counted", func(st gatewayd.Status) bool { return st.Delivery.DeadLetters == 1 })
	if st.Delivery.GivenUp["send"] != 1 {
		t.Errorf("given up: %+v", st.Delivery.GivenUp)
	}

	// Two operators resubmit at once: one wins, the other is told.
	var (
		wg      sync.WaitGroup
		results [2]result
	)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = gw(t, cfg, "deliveries", "resubmit", l.ID)
		}()
	}
	wg.Wait()
	won := 0
	for _, r := range results {
		switch {
		case r.Code == 0 && strings.Contains(r.Stdout, "resubmitted reply "+l.ID):
			won++
		case r.Code == 1 && (strings.Contains(r.Stderr, "409") || strings.Contains(r.Stderr, "404")):
		default:
			t.Errorf("resubmit: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
	}
	if won != 1 {
		t.Fatalf("%d resubmits succeeded, want 1: %+v", won, results)
	}
	waitReply(t, tg, "reply: nobody hears this")
	waitStatus(t, cfg, "the outbox empty", func(st gatewayd.Status) bool {
		return st.Delivery.Replies == 0 && st.Delivery.Pending == 0 && st.Delivery.DeadLetters == 0
	})
	if n := countSent(tg, "reply: nobody hears this"); n != 1 {
		t.Errorf("the resubmitted reply was sent %d times, want 1", n)
	}
	if r := gw(t, cfg, "deliveries", "resubmit", l.ID); r.Code != 1 || !strings.Contains(r.Stderr, "404") {
		t.Errorf("resubmit of a letter already resubmitted: exit %d %s", r.Code, r.Stderr)
	}

	// Discard.
	blocked()
	tg.DM(222, "discard me")
	l = waitLetter(t, cfg, "discard me")
	gw(t, cfg, "deliveries", "discard", l.ID).want(t, 0)
	if ls := listLetters(t, cfg); len(ls) != 0 {
		t.Errorf("letters after the discard: %+v", ls)
	}
	if r := gw(t, cfg, "deliveries", "resubmit", l.ID); r.Code != 1 || !strings.Contains(r.Stderr, "404") {
		t.Errorf("resubmit of a discarded letter: exit %d %s", r.Code, r.Stderr)
	}
	if n := countSent(tg, "reply: discard me"); n != 0 {
		t.Errorf("a discarded reply was sent %d times", n)
	}
}

func listLetters(t *testing.T, cfg string) []sessions.DeadLetter {
	t.Helper()
	r := gw(t, cfg, "deliveries", "list", "--failed", "--json").want(t, 0)
	var body struct {
		Letters []sessions.DeadLetter `json:"letters"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &body); err != nil {
		t.Fatalf("list --failed --json: %v\n%s", err, r.Stdout)
	}
	return body.Letters
}

// waitLetter waits (within statusCap) for a dead letter whose reply
// answers text.
func waitLetter(t *testing.T, cfg, text string) sessions.DeadLetter {
	t.Helper()
	deadline := time.Now().Add(statusCap)
	for {
		for _, l := range listLetters(t, cfg) {
			if l.Reply != nil && strings.Contains(strings.Join(l.Reply.Chunks, ""), text) {
				return l
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no dead letter for %q within %s", text, statusCap)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func countSent(tg *telegramtest.Server, text string) int {
	n := 0
	for _, s := range tg.Sent() {
		if strings.Contains(s.Text, text) {
			n++
		}
	}
	return n
}
