package dispatch

import (
	"context"
	"strings"
	"testing"

	"github.com/gateway/gateway/sessions"
)

// TestMovedChatKeepsItsReminders: a reminder set in group -100 before the
// group was upgraded to supergroup -1001 (a new chat id) follows the
// chat: it is listed and can be cancelled with /remind in the
// supergroup, and it is delivered to the new chat in the moved session.
// Before, it stayed on the old id: /remind list in the supergroup said
// "No reminders" and /remind cancel said there was no such reminder.
func TestMovedChatKeepsItsReminders(t *testing.T) {
	h := newHarness(t, "", nil)
	withRoomMembers(h)
	const oldChat, newChat = "-100", "-1001"
	h.handle(remindMsg("1", "/remind every day at 09:00 stand-up"))
	h.drained()
	id := jobIDRe.FindString(strings.Join(h.tg.texts(), "\n"))
	if id == "" {
		t.Fatalf("/remind answered %q", h.tg.texts())
	}
	for range 2 { // each service message, or a replay at start
		h.handle(movedIn(oldChat, newChat))
	}
	j, err := h.mgr.Backend().Jobs().Job(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if j.Target.ChatID != newChat || j.SessionKey != "agent:main:tg:group:"+newChat {
		t.Errorf("job after the move targets chat %s, session %s; want chat %s, its moved session", j.Target.ChatID, j.SessionKey, newChat)
	}
	list := remindMsg("1", "/remind list")
	list.ChatID = newChat
	h.handle(list)
	cancel := remindMsg("1", "/remind cancel "+id)
	cancel.ChatID = newChat
	h.handle(cancel)
	h.drained()
	texts := h.tg.texts()[1:]
	if len(texts) != 2 || !strings.Contains(texts[0], id) || texts[1] != "Cancelled "+id+"." {
		t.Errorf("/remind list and cancel in the supergroup answered %q; want the reminder listed and cancelled", texts)
	}
	if js, err := h.mgr.Backend().Jobs().ListJobs(context.Background(), sessions.JobFilter{}); err != nil || len(js) != 0 {
		t.Errorf("jobs after the cancel: %+v, %v", js, err)
	}
}
