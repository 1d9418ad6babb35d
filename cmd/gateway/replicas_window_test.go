package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// The documented order window of a stop: an update posted to a replica at
// the instant it is stopped (SIGSTOP) may have been journaled by it before
// it froze, while the balancer, seeing no answer, posts the chat's later
// updates elsewhere. That message waits for the stopped replica's lease to
// run out and is then taken over, so it can be answered after later
// messages of its chat. The order checks name such a chat's problems in
// the log; every other chat's order must hold.

var (
	windowMsgRE  = regexp.MustCompile(`^c(\d+) n\d+$`)
	windowChatRE = regexp.MustCompile(`chat c(\d+)\b`)
	windowPeerRE = regexp.MustCompile(`direct:(\d+)`)
)

// stopWindowChats are the chats with an update whose post to the stopped
// replica (target index stopped) was in flight when it was stopped (at
// stopAt, taken just after the signal) and failed: only such a post can
// have been journaled by the frozen replica.
func (tr *replicaTraffic) stopWindowChats(bal *telegramtest.Balancer, stopped int, stopAt time.Time) map[int]bool {
	failed := map[int]bool{}
	for _, a := range bal.Attempts() {
		if a.Target == stopped && a.Err != "" && !a.Start.After(stopAt) && a.Start.Add(a.Took).After(stopAt.Add(-50*time.Millisecond)) {
			failed[a.UpdateID] = true
		}
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	chats := map[int]bool{}
	for m, id := range tr.updates {
		if sm := windowMsgRE.FindStringSubmatch(m); sm != nil && failed[id] {
			c, _ := strconv.Atoi(sm[1])
			chats[c] = true
		}
	}
	return chats
}

// inWindow splits order problems into those of a chat in the stop window
// (logged) and the others (returned: failures).
func inWindow(t *testing.T, what string, list []string, chats map[int]bool) []string {
	t.Helper()
	var keep, window []string
	for _, p := range list {
		c := -1
		if sm := windowChatRE.FindStringSubmatch(p); sm != nil {
			c, _ = strconv.Atoi(sm[1])
		} else if sm := windowPeerRE.FindStringSubmatch(p); sm != nil {
			id, _ := strconv.Atoi(sm[1])
			c = id - int(replicaChatID(0))
		}
		if chats[c] {
			window = append(window, p)
		} else {
			keep = append(keep, p)
		}
	}
	if len(window) > 0 {
		t.Logf("%d %s in the stop window (a chat whose update was posted to the replica as it was stopped): %s",
			len(window), what, strings.Join(firstN(window, 3), "; "))
	}
	return keep
}

// TestInWindow: problems of a chat in the window are logged, others kept.
func TestInWindow(t *testing.T) {
	got := inWindow(t, "order problems", []string{
		`chat c2: "[c2 n28] r5" after n31`, "chat c3 request r9: n4 after n5",
		fmt.Sprintf("agent:main:telegram:direct:%d message 7: n37 after n38", replicaChatID(2)),
	}, map[int]bool{2: true})
	if len(got) != 1 || !strings.HasPrefix(got[0], "chat c3") {
		t.Errorf("kept %v, want only chat c3's problem", got)
	}
}
