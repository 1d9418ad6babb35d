package telegram_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

func choiceKeys(t *testing.T, now func() time.Time) *channels.ChoiceKeys {
	t.Helper()
	k, err := channels.NewChoiceKeys(bytes.Repeat([]byte{7}, channels.ChoiceKeySize), time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestChoicePresses: a question asked in a forum topic shows its buttons;
// a press by a member the handler (the policy) refuses does nothing and
// leaves the keyboard; a press by an allowed member reaches the handler as
// a message of the topic from the presser, its text the label, after which
// the keyboard is removed and the query answered; a forged press and a
// stale press never reach the handler and are told so.
func TestChoicePresses(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	var now time.Time = time.Now()
	keys := choiceKeys(t, func() time.Time { return now })
	a, err := telegram.New("default", baseConfig(srv), telegram.Options{Logger: zaptest.NewLogger(t), HTTPClient: srv.Client(),
		Backoff: 10 * time.Millisecond, Choices: keys})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	rec.fail = func(in channels.Inbound, _ int) error {
		if in.SenderID == "9" {
			return channels.ErrRejected // the access policy refuses member 9
		}
		return nil
	}
	run(t, a, rec.handle)
	ctx := testCtx(t)
	out := channels.Outbound{Address: channels.Address{Channel: "telegram", AccountID: "default", ChatID: id(int(forum)), ThreadID: "77", IsTopic: true}}
	buttons, err := keys.Question(out.Address, []string{"Tea", "Coffee"})
	if err != nil {
		t.Fatal(err)
	}
	qid, err := a.Ask(ctx, out, "**Tea** or coffee?", buttons)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := strconv.Atoi(qid)
	kb := srv.Keyboard(forum, msg)
	if len(kb) != 1 || len(kb[0]) != 2 || kb[0][1].Text != "Coffee" || len(kb[0][1].CallbackData) > 64 {
		t.Fatalf("keyboard = %+v", kb)
	}
	if vis := srv.Visible(forum); len(vis) != 1 || vis[0].ThreadID != 77 || vis[0].Text != "<b>Tea</b> or coffee?" {
		t.Fatalf("question = %+v", vis)
	}

	// Refused by the policy: nothing happens.
	u, _, _ := srv.Press(forum, msg, 9, "Mallory", "Coffee")
	waitConfirmed(t, srv, u)
	if ans, err := srv.WaitCallbackAnswers(ctx, 1); err != nil || ans[0].Text != "" {
		t.Fatalf("refused press answered %+v, %v", ans, err)
	}
	if srv.Keyboard(forum, msg) == nil || len(srv.MarkupEdits()) != 0 {
		t.Fatal("a refused press closed the keyboard")
	}

	// A forged press: another index with the first button's MAC.
	forged := strings.Replace(buttons[0].Data, ".0.", ".1.", 1)
	u, _ = srv.PressData(forum, msg, 8, "Eve", forged)
	waitConfirmed(t, srv, u)
	if ans, _ := srv.WaitCallbackAnswers(ctx, 2); ans[1].Text != channels.PressInvalidText {
		t.Fatalf("forged press answered %+v", ans[1])
	}

	// The allowed member's press.
	u, _, _ = srv.Press(forum, msg, 7, "Ann", "Coffee")
	waitConfirmed(t, srv, u)
	got := rec.accepted()
	if len(got) != 2 { // Mallory's (refused) and Ann's
		t.Fatalf("handler got %+v", got)
	}
	p := got[1]
	want := channels.Inbound{Address: channels.Address{Channel: "telegram", AccountID: "default", ChatID: id(int(forum)), ThreadID: "77", IsTopic: true},
		MessageID: qid, ChatType: channels.Group, SenderID: "7", SenderName: "Ann", CaseSensitive: true, Mentioned: true, Text: "Coffee", Press: true}
	if p.Address != want.Address || p.MessageID != want.MessageID || p.SenderID != "7" || p.Text != "Coffee" || !p.Press || !p.Mentioned || p.ChatType != channels.Group {
		t.Fatalf("press = %+v\nwant %+v", p, want)
	}
	edits, err := srv.WaitMarkupEdits(ctx, 1)
	if err != nil || edits[0].MessageID != msg || edits[0].Keyboard != nil || srv.Keyboard(forum, msg) != nil {
		t.Fatalf("keyboard not closed: %+v, %v", edits, err)
	}
	if ans, _ := srv.WaitCallbackAnswers(ctx, 3); ans[2].Text != "" {
		t.Fatalf("accepted press answered %+v", ans[2])
	}

	// A client still showing the keyboard presses again.
	u, _ = srv.PressData(forum, msg, 7, "Ann", buttons[0].Data)
	waitConfirmed(t, srv, u)
	if ans, _ := srv.WaitCallbackAnswers(ctx, 4); ans[3].Text != channels.PressAnsweredText {
		t.Fatalf("stale press answered %+v", ans[3])
	}
	if rec.callCount() != 2 {
		t.Fatalf("handler called %d times, want 2", rec.callCount())
	}
}

// TestChoiceDuplicateAndExpiry: a press the journal already holds (the
// handler says duplicate) closes the keyboard and tells the presser it
// was answered; a press after the keys' lifetime is refused as expired.
func TestChoiceDuplicateAndExpiry(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	now := time.Now()
	var clock = func() time.Time { return now }
	keys := choiceKeys(t, func() time.Time { return clock() })
	a, err := telegram.New("default", baseConfig(srv), telegram.Options{Logger: zaptest.NewLogger(t), HTTPClient: srv.Client(),
		Backoff: 10 * time.Millisecond, Choices: keys})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	rec.fail = func(channels.Inbound, int) error { return channels.ErrDuplicate }
	ctx := testCtx(t)
	out := channels.Outbound{Address: channels.Address{Channel: "telegram", AccountID: "default", ChatID: "55"}}
	ask := func() int {
		b, err := keys.Question(out.Address, []string{"Yes", "No"})
		if err != nil {
			t.Fatal(err)
		}
		qid, err := a.Ask(ctx, out, "Sure?", b)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(qid)
		return n
	}
	run(t, a, rec.handle)
	first, second := ask(), ask()
	u, _, _ := srv.Press(55, first, 55, "Ann", "Yes")
	waitConfirmed(t, srv, u)
	if ans, _ := srv.WaitCallbackAnswers(ctx, 1); ans[0].Text != channels.PressAnsweredText || srv.Keyboard(55, first) != nil {
		t.Fatalf("duplicate press: answer %+v, keyboard %+v", ans, srv.Keyboard(55, first))
	}
	later := now.Add(2 * time.Hour)
	clock = func() time.Time { return later }
	calls := rec.callCount()
	u, _, _ = srv.Press(55, second, 55, "Ann", "No")
	waitConfirmed(t, srv, u)
	if ans, _ := srv.WaitCallbackAnswers(ctx, 2); ans[1].Text != channels.PressExpiredText {
		t.Fatalf("expired press answered %+v", ans[1])
	}
	if rec.callCount() != calls {
		t.Fatal("an expired press reached the handler")
	}
}

// TestButtonPressAfterSupergroupMove: a question asked in a group before
// it was upgraded to a supergroup is signed for the group's id; a press on
// it after the upgrade (reported under the supergroup's id) verifies and
// reaches the handler as a press of the supergroup, and so does a press on
// a copy of the keyboard shown in the supergroup itself. Buttons signed
// for an unrelated chat are still refused in the supergroup.
func TestButtonPressAfterSupergroupMove(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	keys := choiceKeys(t, nil)
	a, err := telegram.New("default", baseConfig(srv), telegram.Options{Logger: zaptest.NewLogger(t), HTTPClient: srv.Client(),
		Backoff: 10 * time.Millisecond, Choices: keys, OffsetStore: &telegram.MemoryOffsetStore{}})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	run(t, a, rec.handle)
	ctx := testCtx(t)
	const oldID, newID, otherID = int64(-4101), int64(-1004101), int64(-4102)
	addr := func(chat int64) channels.Address {
		return channels.Address{Channel: "telegram", AccountID: "default", ChatID: id(int(chat))}
	}
	ask := func(signedFor, sentTo int64) int {
		t.Helper()
		b, err := keys.Question(addr(signedFor), []string{"Yes", "No"})
		if err != nil {
			t.Fatal(err)
		}
		qid, err := a.Ask(ctx, channels.Outbound{Address: addr(sentTo)}, "Sure?", b)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(qid)
		return n
	}
	before := ask(oldID, oldID)
	beforeAgain := ask(oldID, oldID)
	srv.Migrate(oldID, newID)
	u, _ := srv.AddMessage(telegramtest.Message{ChatID: newID, FromID: bob, Text: "hello"}) // the migration is seen
	waitConfirmed(t, srv, u)
	foreign := ask(otherID, newID) // buttons of another chat shown in the supergroup

	u, _, ok := srv.Press(oldID, before, 7, "Ann", "Yes")
	if !ok {
		t.Fatal("no Yes button")
	}
	waitConfirmed(t, srv, u)
	if ans, err := srv.WaitCallbackAnswers(ctx, 1); err != nil || ans[0].Text != "" {
		t.Fatalf("press on the old group's question answered %+v, %v; want accepted", ans, err)
	}
	got := rec.accepted()
	p := got[len(got)-1]
	if !p.Press || p.ChatID != id(int(newID)) || p.Text != "Yes" || p.MessageID != "m"+id(before) {
		t.Fatalf("press = %+v, want a press of chat %d, text Yes, message m%d", p, newID, before)
	}

	// The same keyboard as the supergroup shows it (the group's history
	// carried over): the press comes with the supergroup's id.
	srv.SetKeyboard(newID, beforeAgain, srv.Keyboard(oldID, beforeAgain))
	u, _, _ = srv.Press(newID, beforeAgain, 7, "Ann", "No")
	waitConfirmed(t, srv, u)
	if ans, err := srv.WaitCallbackAnswers(ctx, 2); err != nil || ans[1].Text != "" {
		t.Fatalf("press in the supergroup on the old group's question answered %+v, %v; want accepted", ans, err)
	}
	got = rec.accepted()
	if p := got[len(got)-1]; !p.Press || p.ChatID != id(int(newID)) || p.Text != "No" {
		t.Fatalf("press = %+v, want a press of chat %d, text No", p, newID)
	}

	calls := rec.callCount()
	u, _, _ = srv.Press(newID, foreign, 7, "Ann", "Yes")
	waitConfirmed(t, srv, u)
	if ans, _ := srv.WaitCallbackAnswers(ctx, 3); ans[2].Text != channels.PressInvalidText {
		t.Fatalf("press on another chat's buttons answered %+v, want refused", ans[2])
	}
	if rec.callCount() != calls {
		t.Fatal("a press on another chat's buttons reached the handler")
	}
}

// A question too old for Telegram to show the bot its message (an
// InaccessibleMessage: chat and id only, date 0, no keyboard) can no
// longer be verified: the press is told the question expired and the
// keyboard is closed. It was told "already answered", which it never was,
// and the keyboard stayed for every later press.
func TestPressOnInaccessibleQuestionIsExpired(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	keys := choiceKeys(t, time.Now)
	a, err := telegram.New("default", baseConfig(srv), telegram.Options{Logger: zaptest.NewLogger(t), HTTPClient: srv.Client(),
		Backoff: 10 * time.Millisecond, Choices: keys})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	run(t, a, rec.handle)
	ctx := testCtx(t)
	out := channels.Outbound{Address: channels.Address{Channel: "telegram", AccountID: "default", ChatID: id(int(alice))}}
	buttons, err := keys.Question(out.Address, []string{"Yes", "No"})
	if err != nil {
		t.Fatal(err)
	}
	qid, err := a.Ask(ctx, out, "Deploy?", buttons)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := strconv.Atoi(qid)
	u, _ := srv.PressInaccessible(alice, "private", msg, alice, "Alice", buttons[0].Data)
	waitConfirmed(t, srv, u)
	if ans, err := srv.WaitCallbackAnswers(ctx, 1); err != nil || ans[0].Text != channels.PressExpiredText {
		t.Fatalf("press on an inaccessible question answered %+v, %v; want %q", ans, err, channels.PressExpiredText)
	}
	if srv.Keyboard(alice, msg) != nil {
		t.Error("the keyboard of a question that can no longer be answered stayed open")
	}
	if rec.callCount() != 0 {
		t.Errorf("handler called %d times, want 0", rec.callCount())
	}
}
