package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// TestMain lets the test binary be the floor bot child: -floor re-executes
// its own binary (os.Executable), here the test binary.
func TestMain(m *testing.M) {
	if isFloorChild() {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := floorMain(ctx, os.Args[1:])
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// TestFloorBurst runs a small burst against the floor bot child and checks
// that every message is answered exactly once, with its own answer, as a
// reply to it, and in order within its chat.
func TestFloorBurst(t *testing.T) {
	const n, chats = 50, 5
	tg, model := newFakes()
	defer tg.Close()
	defer model.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d, err := startReady(ctx, "", "floor", daemonSpec{dir: t.TempDir(), tg: tg, modelURL: model.BaseURL(),
		streaming: "off", maxConcurrent: 3, floor: true})
	if d != nil {
		defer d.Stop()
	}
	if err != nil {
		t.Fatal(err)
	}
	msgID := map[string]int{} // text → message id
	for i := range n {
		text := fmt.Sprintf("m%d", i)
		_, msgID[text] = tg.AddMessage(telegramtest.Message{ChatID: int64(10000 + i%chats), FromID: int64(10000 + i%chats), Text: text})
	}
	if _, err := tg.WaitSent(ctx, n); err != nil {
		t.Fatalf("%d of %d answered: %v", tg.SentCount(), n, err)
	}
	time.Sleep(200 * time.Millisecond) // a duplicate would arrive now
	answered := map[string]int{}
	last := map[int64]int{} // chat → message id last answered
	for _, s := range tg.Sent() {
		text, ok := strings.CutPrefix(s.Text, "ack ")
		id, known := msgID[text]
		if s.Method != "sendMessage" || !ok || !known {
			t.Errorf("unexpected %s in chat %d: %q", s.Method, s.ChatID, s.Text)
			continue
		}
		answered[text]++
		if s.ReplyTo != id {
			t.Errorf("answer to %s replies to message %d, want %d", text, s.ReplyTo, id)
		}
		if want := int64(10000 + indexOf(text)%chats); s.ChatID != want {
			t.Errorf("answer to %s in chat %d, want %d", text, s.ChatID, want)
		}
		if s.ReplyTo < last[s.ChatID] {
			t.Errorf("chat %d: answer to message %d after the answer to %d", s.ChatID, s.ReplyTo, last[s.ChatID])
		}
		last[s.ChatID] = s.ReplyTo
	}
	for i := range n {
		if text := fmt.Sprintf("m%d", i); answered[text] != 1 {
			t.Errorf("%s answered %d times, want once", text, answered[text])
		}
	}
}

// indexOf is i of the bench message text "m<i>" (-1 if it is not one).
func indexOf(text string) int {
	var i int
	if _, err := fmt.Sscanf(text, "m%d", &i); err != nil {
		return -1
	}
	return i
}

// TestFloorRun runs the bench itself with -floor (burst, 50 messages over
// 5 chats): run fails when a reply is lost or duplicated.
func TestFloorRun(t *testing.T) {
	o := options{floor: true, mode: "burst", n: 50, chats: 5, timeout: 60 * time.Second, streaming: "off", maxConcurrent: 8}
	if err := run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
}
