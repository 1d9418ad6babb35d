package main

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/gateway/gateway/agents/openai/openaitest"
)

// The fake model of the multi-replica test. Every user message is
// "c<chat> n<seq>" (one DM chat is one session; seq counts that chat's
// messages from 1). The model records, per chat, which n's each request
// carried, and answers after 100-300 ms with one line naming the chat, the
// n's since the last assistant message and the request's number:
// "[c3 n7 n8] r41". A reply text is unique per request, so the fake
// Telegram's record tells a chunk sent twice (same text) from a message
// answered by two turns (two texts naming it).

var (
	replicaMsgRE   = regexp.MustCompile(`\bc(\d+) n(\d+)\b`)
	replicaReplyRE = regexp.MustCompile(`^\[c(\d+)((?: n\d+)+)\] r(\d+)$`)
)

// replicaMsg is the text of message seq of chat c.
func replicaMsg(c, seq int) string { return fmt.Sprintf("c%d n%d", c, seq) }

// modelCall is one request the model saw.
type modelCall struct {
	n    int    // request number
	path string // tells the replica run apart (BaseURLVia)
	at   time.Time
	all  []int // the n's of every user message in the context, in order
	new  []int // the n's since the last assistant message
}

// replicaModel scripts the fake model and keeps its calls per chat.
type replicaModel struct {
	mu    sync.Mutex
	calls map[int][]modelCall // chat -> calls, in arrival order; guarded by mu
}

func newReplicaModel(m *openaitest.Server) *replicaModel {
	rm := &replicaModel{calls: map[int][]modelCall{}}
	m.SetKey(func(r openaitest.Request) string {
		if c, _, ok := rm.parse(r); ok {
			return "c" + strconv.Itoa(c)
		}
		return ""
	})
	m.SetReply(rm.reply)
	return rm
}

// userText is the text of a user message.
func userText(m goopenai.ChatCompletionMessage) string {
	text := m.Content
	for _, p := range m.MultiContent {
		text += p.Text
	}
	return text
}

// parse reads the chat of request r and its calls' n's; false if r is not
// a chat of the test.
func (rm *replicaModel) parse(r openaitest.Request) (chat int, call modelCall, ok bool) {
	chat = -1
	lastAssistant := -1
	for i, m := range r.Body.Messages {
		if m.Role == goopenai.ChatMessageRoleAssistant {
			lastAssistant = i
		}
	}
	for i, m := range r.Body.Messages {
		if m.Role != goopenai.ChatMessageRoleUser {
			continue
		}
		for _, sm := range replicaMsgRE.FindAllStringSubmatch(userText(m), -1) {
			c, _ := strconv.Atoi(sm[1])
			n, _ := strconv.Atoi(sm[2])
			if chat < 0 {
				chat = c
			}
			call.all = append(call.all, n)
			if i > lastAssistant {
				call.new = append(call.new, n)
			}
		}
	}
	return chat, call, chat >= 0
}

func (rm *replicaModel) reply(n int, r openaitest.Request) openaitest.Reply {
	delay := time.Duration(100+rand.IntN(201)) * time.Millisecond
	chat, call, ok := rm.parse(r)
	if !ok {
		return openaitest.Reply{Text: "ok", Delay: delay}
	}
	call.n, call.path, call.at = n, r.Path, time.Now()
	rm.mu.Lock()
	rm.calls[chat] = append(rm.calls[chat], call)
	rm.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "[c%d", chat)
	for _, k := range call.new {
		fmt.Fprintf(&b, " n%d", k)
	}
	fmt.Fprintf(&b, "] r%d", n)
	return openaitest.Reply{Text: b.String(), Delay: delay}
}

// snapshot returns a copy of the calls per chat.
func (rm *replicaModel) snapshot() map[int][]modelCall {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	out := make(map[int][]modelCall, len(rm.calls))
	for c, calls := range rm.calls {
		out[c] = append([]modelCall(nil), calls...)
	}
	return out
}

// checkOrder returns what the model's calls say against per-session
// order: within one request the context's n's increase strictly (each
// input appended once, in order), and across the requests of a chat the
// n's appear for the first time in increasing order (no turn ran a later
// message while an earlier one of its session was still waiting).
func (rm *replicaModel) checkOrder() (problems []string) {
	for chat, calls := range rm.snapshot() {
		maxSeen := 0
		for _, c := range calls {
			for i := 1; i < len(c.all); i++ {
				if c.all[i] <= c.all[i-1] {
					problems = append(problems, fmt.Sprintf("chat c%d request r%d (%s): context n's out of order or repeated: %v", chat, c.n, c.path, c.all))
					break
				}
			}
			for _, k := range c.new {
				if k > maxSeen {
					maxSeen = k
					continue
				}
				if !seenBefore(calls, c.n, k) {
					problems = append(problems, fmt.Sprintf("chat c%d request r%d (%s): n%d reached the model after n%d", chat, c.n, c.path, k, maxSeen))
				}
			}
		}
	}
	return problems
}

// seenBefore reports whether n k was in a call before request n.
func seenBefore(calls []modelCall, before, k int) bool {
	for _, c := range calls {
		if c.n == before {
			return false
		}
		for _, x := range c.all {
			if x == k {
				return true
			}
		}
	}
	return false
}

// describe lists chat's calls from 4 before request n to 4 after: number,
// replica run, time and the n's it carried as new.
func (rm *replicaModel) describe(chat, n int) string {
	calls := rm.snapshot()[chat]
	i := slices.IndexFunc(calls, func(c modelCall) bool { return c.n == n })
	if i < 0 {
		return ""
	}
	var b strings.Builder
	for _, c := range calls[max(0, i-4):min(len(calls), i+5)] {
		run := strings.TrimSuffix(strings.TrimPrefix(c.path, "/via/"), "/v1/chat/completions")
		fmt.Fprintf(&b, "\n  r%d by %s at %s: new %v", c.n, run, c.at.Format("15:04:05.000"), c.new)
	}
	return fmt.Sprintf("chat c%d, the model's requests around r%d:%s", chat, n, b.String())
}
