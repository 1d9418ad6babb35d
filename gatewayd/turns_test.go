package gatewayd

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// turnLog is what the fake model saw per session: how many turns of it
// were in flight at most, and the message numbers of each sender in the
// order the model received them.
type turnLog struct {
	mu       sync.Mutex
	inFlight map[string]int
	maxIn    map[string]int
	seen     map[string][]string // session -> "a3", "b1", ... in arrival order
}

var msgToken = regexp.MustCompile(`\b([ab])(\d+)\b`)

// reply answers a request of session s<k> after delay, counting it in
// flight until the answer is on its way (the next turn of the session
// cannot begin before it arrives).
func (l *turnLog) reply(delay time.Duration) func(int, openaitest.Request) openaitest.Reply {
	return func(_ int, r openaitest.Request) openaitest.Reply {
		text := newInput(r)
		session, _, _ := strings.Cut(strings.TrimSpace(text), " ")
		l.mu.Lock()
		l.inFlight[session]++
		l.maxIn[session] = max(l.maxIn[session], l.inFlight[session])
		for _, m := range msgToken.FindAllString(text, -1) {
			l.seen[session] = append(l.seen[session], m)
		}
		l.mu.Unlock()
		hold := make(chan struct{})
		go func() {
			time.Sleep(delay)
			l.mu.Lock()
			l.inFlight[session]--
			l.mu.Unlock()
			close(hold)
		}()
		return openaitest.Reply{Text: "ok", Hold: hold}
	}
}

// TestReplicasSerialiseSessions: two replicas on one database serve the
// web chat of the same sessions at once, each browser on its own replica.
// The fake model never has two turns of one session in flight, sees every
// message exactly once and each sender's messages in order, and every
// request gets its answer from the replica it is connected to.
func TestReplicasSerialiseSessions(t *testing.T) {
	url := pgtest.NewDatabase(t)
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	log := &turnLog{inFlight: map[string]int{}, maxIn: map[string]int{}, seen: map[string][]string{}}
	model.SetReply(log.reply(150 * time.Millisecond))
	yaml := func(who string) string {
		return replicaConfig(filepath.Join(t.TempDir(), who), tg, model, url)
	}
	a := startReplica(t, "a", yaml("a"), url, &polls{}, false)
	b := startReplica(t, "b", yaml("b"), url, &polls{}, false)

	const sessionsN, perSender = 4, 6
	sids := make([]string, sessionsN)
	for k := range sessionsN {
		_, sids[k] = chat(t, a.addr, "", fmt.Sprintf("s%d hello", k))
	}
	var wg sync.WaitGroup
	for k := range sessionsN {
		for _, r := range []*replica{a, b} {
			wg.Go(func() {
				for n := 1; n <= perSender; n++ {
					reply, _ := chat(t, r.addr, sids[k], fmt.Sprintf("s%d %s%d", k, r.who, n))
					if reply == "" {
						t.Errorf("s%d %s%d: empty answer", k, r.who, n)
					}
				}
			})
		}
	}
	wg.Wait()

	log.mu.Lock()
	defer log.mu.Unlock()
	for k := range sessionsN {
		s := fmt.Sprintf("s%d", k)
		if log.maxIn[s] != 1 {
			t.Errorf("%s: %d turns in flight at once; want 1 (the session ran on two replicas at once)", s, log.maxIn[s])
		}
		last := map[string]int{}
		count := map[string]int{}
		for _, m := range log.seen[s] {
			who, n := m[:1], must(strconv.Atoi(m[1:]))
			count[m]++
			if n <= last[who] && count[m] == 1 {
				t.Errorf("%s: the model saw %s after %s%d (order of %s's messages lost): %v", s, m, who, last[who], who, log.seen[s])
			}
			last[who] = max(last[who], n)
		}
		for _, who := range []string{"a", "b"} {
			for n := 1; n <= perSender; n++ {
				m := fmt.Sprintf("%s%d", who, n)
				// A later turn's context repeats earlier inputs only in
				// the transcript, never as the last user text: each
				// message reaches the model as new input once.
				if count[m] != 1 {
					t.Errorf("%s: message %s reached the model as new input %d times; want 1 (%v)", s, m, count[m], log.seen[s])
				}
			}
		}
	}
}

// newInput is the text of the user messages after the last assistant
// message of r: the turn's new input (one message, or several merged).
func newInput(r openaitest.Request) string {
	var parts []string
	for i := len(r.Body.Messages) - 1; i >= 0; i-- {
		m := r.Body.Messages[i]
		if m.Role != "user" {
			break
		}
		text := m.Content
		for _, p := range m.MultiContent {
			text += p.Text
		}
		parts = append([]string{text}, parts...)
	}
	return strings.Join(parts, "\n")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
