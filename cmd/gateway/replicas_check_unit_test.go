package main

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// TestCheckRepliesFindsEachFault: the multi-replica test's reading of the
// fake Telegram's record on a record made by hand: a chunk sent again
// after its sender was killed right after it is in the window; one its
// killed sender followed with more to that chat is not; so is one the
// stopped run sent again after it was continued only if it was its first
// send to the chat; an input in two different replies, a reply out of
// order and an input never answered are each reported.
func TestCheckRepliesFindsEachFault(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	send := func(via string, c int, text string) {
		t.Helper()
		res, err := http.PostForm(tg.Via(via)+"/bot"+tg.Token()+"/sendMessage",
			url.Values{"chat_id": {strconv.FormatInt(replicaChatID(c), 10)}, "text": {text}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	send("r1-1", 0, "[c0 n1] r1") // the last r1-1 sent to c0 before its kill
	send("r1-1", 1, "[c1 n1] r2")
	send("r1-1", 1, "[c1 n2] r3") // r1-1 went on: r2 again is outside the window
	send("r2-1", 0, "[c0 n1] r1")
	send("r2-1", 1, "[c1 n1] r2")
	send("r2-1", 2, "[c2 n1 n2] r4")
	send("r3-1", 2, "[c2 n2] r5") // n2 in two replies
	send("r3-1", 3, "[c3 n2] r6")
	send("r3-1", 3, "[c3 n1] r7") // out of order
	send("r3-1", 5, "[c5 n1] r8") // r3-1 is stopped after this
	time.Sleep(10 * time.Millisecond)
	cont := time.Now()
	send("r2-1", 5, "[c5 n1] r8") // another replica sent it again meanwhile: in the window
	send("r3-1", 5, "[c5 n2] r9")
	send("r2-1", 5, "[c5 n2] r9") // r3-1's first after it was continued: in the window
	send("r3-1", 4, "Sorry, something went wrong")

	rep := checkReplies(tg, []int{1, 2, 2, 2, 1, 2}, map[string]time.Time{},
		replicaFaults{killed: map[string]bool{"r1-1": true}, stopped: "r3-1", contAt: cont})
	if rep.inWindow != 3 {
		t.Errorf("in the window: %d, want 3", rep.inWindow)
	}
	want := replyReport{
		lost:    []string{"c4 n1"},
		twice:   []string{`c2 n2 answered by ["[c2 n1 n2] r4" "[c2 n2] r5"]`},
		order:   []string{`chat c2: "[c2 n2] r5" (by r3-1) after a reply that answered up to n2`, `chat c3: "[c3 n1] r7" (by r3-1) after a reply that answered up to n2`},
		notices: []string{`sendMessage to chat c4 by r3-1: "Sorry, something went wrong"`},
	}
	got := replyReport{lost: rep.lost, twice: rep.twice, order: rep.order, notices: rep.notices}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(replyReport{})); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
	if len(rep.outside) != 1 || rep.outside[0][:10] != "[c1 n1] r2" {
		t.Errorf("outside the window: %q, want [c1 n1] r2 only", rep.outside)
	}
}
