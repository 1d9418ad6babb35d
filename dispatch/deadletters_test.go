package dispatch

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/sessions"
)

// giveUpMessage makes msg's turn fail until it is given up (MaxFailures 1).
func giveUpMessage(t *testing.T, h *harness, msg channels.Inbound) {
	t.Helper()
	h.d.opts.MaxFailures = 1
	w := acceptOnly(t, h, msg)
	h.d.fails.failed(h.ctx, []*work{w}, h.d.log, errBoom)
	h.drained()
}

func letters(t *testing.T, h *harness) []sessions.DeadLetter {
	t.Helper()
	ls, err := h.d.DeadLetters(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

// resubmitConcurrently calls Resubmit n times at once and returns how many
// succeeded; the others must be refused as claimed or gone.
func resubmitConcurrently(t *testing.T, h *harness, id string, n int) int {
	t.Helper()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		ok    int
		errs  []error
		start = make(chan struct{})
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := h.d.Resubmit(context.Background(), id)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, sessions.ErrDeadLetterClaimed), errors.Is(err, sessions.ErrNoDeadLetter):
			default:
				errs = append(errs, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if errs != nil {
		t.Fatalf("resubmit errors: %v", errs)
	}
	return ok
}

// TestGivenUpMessageKeptThenResubmittedOnce: a message given up is kept
// with its reason and time; resubmitted from several callers at once it
// gets one new turn and one reply; the letter is gone afterwards and a
// later resubmit says so.
func TestGivenUpMessageKeptThenResubmittedOnce(t *testing.T) {
	h := newHarness(t, "", nil)
	before := time.Now()
	msg := in("tg", "31", "lost one")
	giveUpMessage(t, h, msg)
	ls := letters(t, h)
	if len(ls) != 1 {
		t.Fatalf("dead letters after a give-up: %+v", ls)
	}
	dl := ls[0]
	if dl.Kind != sessions.DeadMessage || dl.State != sessions.DeadFailed || dl.Reason != "it failed 1 times" ||
		dl.At.Before(before) || dl.Record == nil || dl.Record.ID != RecordID(msg) || !strings.Contains(string(dl.Record.Payload), "lost one") {
		t.Fatalf("dead letter %+v", dl)
	}
	if got := h.tg.texts(); len(got) != 1 || !strings.HasPrefix(got[0], "Sorry") {
		t.Fatalf("the give-up notice: %q", got)
	}
	calls := len(h.m.requests())

	if n := resubmitConcurrently(t, h, dl.ID, 4); n != 1 {
		t.Fatalf("%d resubmits succeeded, want 1", n)
	}
	h.drained()
	if got := len(h.m.requests()) - calls; got != 1 {
		t.Errorf("%d turns after the resubmits, want 1", got)
	}
	if got := h.tg.texts(); !slices.Equal(got[1:], []string{"re: lost one"}) {
		t.Errorf("sent after the resubmits: %q", got[1:])
	}
	if ls := letters(t, h); len(ls) != 0 {
		t.Errorf("letters left: %+v", ls)
	}
	if _, err := h.d.Resubmit(h.ctx, dl.ID); !errors.Is(err, sessions.ErrNoDeadLetter) {
		t.Errorf("a resubmit after the first: %v, want ErrNoDeadLetter", err)
	}
	// Nothing runs it again at the next start.
	h.restart()
	if n, err := h.d.Resume(h.ctx); err != nil || n != 0 {
		t.Fatalf("resume after the resubmit: %d, %v", n, err)
	}
	h.drained()
	if got := len(h.m.requests()) - calls; got != 1 {
		t.Errorf("%d turns after a restart, want still 1", got)
	}
}

// TestGivenUpReplyKeptThenResubmittedOnce: a reply whose second chunk
// could not be delivered is kept with the chunks sent; resubmitted twice
// at once, only the missing chunk goes out, once.
func TestGivenUpReplyKeptThenResubmittedOnce(t *testing.T) {
	defer func(r []time.Duration) { sendRetries = r }(sendRetries)
	sendRetries = []time.Duration{time.Millisecond}
	m := &model{reply: func(llm.Request) (string, error) { return "first§second", nil }}
	h := newHarness(t, "", m)
	var mu sync.Mutex
	blocked := true
	h.tg.failSend = func(out channels.Outbound, i int) error {
		mu.Lock()
		defer mu.Unlock()
		if i == 1 && blocked {
			return channels.Refusal(errors.New("403 Forbidden: bot was blocked by the user"))
		}
		return nil
	}
	h.handle(in("tg", "32", "two parts"))
	h.drained()
	ls := letters(t, h)
	if len(ls) != 1 || ls[0].Kind != sessions.DeadReply || ls[0].Reply == nil || ls[0].Reply.Sent != 1 ||
		!strings.Contains(ls[0].Reason, "blocked by the user") {
		t.Fatalf("dead letters after a failed send: %+v", ls)
	}
	mu.Lock()
	blocked = false
	mu.Unlock()
	if n := resubmitConcurrently(t, h, ls[0].ID, 2); n != 1 {
		t.Fatalf("%d resubmits succeeded, want 1", n)
	}
	h.drained()
	if got := h.tg.texts(); !slices.Equal(got, []string{"first", "second"}) {
		t.Fatalf("sent %q, want the missing chunk once", got)
	}
	if len(m.requests()) != 1 {
		t.Errorf("%d model calls, want 1 (a reply is resent, not generated again)", len(m.requests()))
	}
}

// TestDeadLettersDiscardAndBound: the store keeps DeadLetterKeep letters,
// the newest; a discarded letter is gone and cannot be resubmitted.
func TestDeadLettersDiscardAndBound(t *testing.T) {
	h := newHarness(t, "", nil)
	h.d.opts.DeadLetterKeep = 2
	for _, text := range []string{"one", "two", "three"} {
		giveUpMessage(t, h, in("tg", "33", text))
		time.Sleep(2 * time.Millisecond) // distinct give-up times order the letters
	}
	ls := letters(t, h)
	if len(ls) != 2 || !strings.Contains(string(ls[0].Record.Payload), "three") || !strings.Contains(string(ls[1].Record.Payload), "two") {
		t.Fatalf("kept %+v, want the two newest", ls)
	}
	if err := h.d.Discard(h.ctx, ls[1].ID); err != nil {
		t.Fatal(err)
	}
	if err := h.d.Discard(h.ctx, ls[1].ID); !errors.Is(err, sessions.ErrNoDeadLetter) {
		t.Errorf("second discard: %v", err)
	}
	if _, err := h.d.Resubmit(h.ctx, ls[1].ID); !errors.Is(err, sessions.ErrNoDeadLetter) {
		t.Errorf("resubmit of a discarded letter: %v", err)
	}
	if left := letters(t, h); len(left) != 1 || left[0].ID != ls[0].ID {
		t.Errorf("left %+v", left)
	}
}

// TestHalfDoneResubmitFinishedAtStart: a process that died after claiming
// a letter (before or after writing its record) leaves it resubmitting;
// the next start runs the message once and removes the letter.
func TestHalfDoneResubmitFinishedAtStart(t *testing.T) {
	for _, written := range []bool{false, true} {
		name := "claimed only"
		if written {
			name = "record written"
		}
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, "", nil)
			giveUpMessage(t, h, in("tg", "34", "half done"))
			dl := letters(t, h)[0]
			dead := h.d.opts.Sessions.DeadLetters()
			if _, err := dead.ClaimDeadLetter(h.ctx, dl.ID); err != nil {
				t.Fatal(err)
			}
			if written {
				if _, err := h.journal().Accept(h.ctx, resubmitRecord(dl, time.Now)); err != nil {
					t.Fatal(err)
				}
			}
			calls := len(h.m.requests())
			h.restart()
			if _, err := h.d.Resume(h.ctx); err != nil {
				t.Fatal(err)
			}
			h.drained()
			if got := len(h.m.requests()) - calls; got != 1 {
				t.Errorf("%d turns after the start, want 1", got)
			}
			if ls := letters(t, h); len(ls) != 0 {
				t.Errorf("letters left: %+v", ls)
			}
		})
	}
}

// TestResubmitRefusedWhileClaimed: while a resubmit holds a letter (in
// this process or another), a second resubmit and a discard are refused
// and run nothing.
func TestResubmitRefusedWhileClaimed(t *testing.T) {
	h := newHarness(t, "", nil)
	giveUpMessage(t, h, in("tg", "35", "held"))
	dl := letters(t, h)[0]
	if _, err := h.d.opts.Sessions.DeadLetters().ClaimDeadLetter(h.ctx, dl.ID); err != nil {
		t.Fatal(err)
	}
	calls := len(h.m.requests())
	if _, err := h.d.Resubmit(h.ctx, dl.ID); !errors.Is(err, sessions.ErrDeadLetterClaimed) {
		t.Errorf("resubmit of a claimed letter: %v, want ErrDeadLetterClaimed", err)
	}
	if err := h.d.Discard(h.ctx, dl.ID); !errors.Is(err, sessions.ErrDeadLetterClaimed) {
		t.Errorf("discard of a claimed letter: %v, want ErrDeadLetterClaimed", err)
	}
	h.drained()
	if got := len(h.m.requests()) - calls; got != 0 {
		t.Errorf("%d turns, want none", got)
	}
}

// TestRefusedSendIsNotRetried: a chunk the platform refused (the bot
// blocked, the chat gone) is asked once and becomes a dead letter at once;
// a failure whose outcome is unknown (a timeout) is still retried.
func TestRefusedSendIsNotRetried(t *testing.T) {
	defer func(r []time.Duration) { sendRetries = r }(sendRetries)
	sendRetries = []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond}
	h := newHarness(t, "", nil)
	var mu sync.Mutex
	tries := map[string]int{}
	h.tg.failSend = func(out channels.Outbound, _ int) error {
		mu.Lock()
		defer mu.Unlock()
		tries[out.ChatID]++
		if out.ChatID == "41" {
			return channels.Refusal(errors.New("403 Forbidden: bot was blocked by the user"))
		}
		return errors.New("read tcp: i/o timeout")
	}
	h.handle(in("tg", "41", "hi"))
	h.handle(in("tg", "42", "hi"))
	h.drained()
	mu.Lock()
	defer mu.Unlock()
	if tries["41"] != 1 || tries["42"] != 1+len(sendRetries) {
		t.Errorf("send attempts %v, want 1 for the refusal and %d for the unknown outcome", tries, 1+len(sendRetries))
	}
	if ls := letters(t, h); len(ls) != 2 {
		t.Errorf("dead letters %+v, want both replies kept", ls)
	}
}
