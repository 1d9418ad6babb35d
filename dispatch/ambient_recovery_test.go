package dispatch

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/sessions"
)

// ambientTick is a journaled ambient tick of chat (as ambientInbound
// makes one) whose turn started.
func ambientTick(t *testing.T, h *harness, chat string) *work {
	t.Helper()
	msg := in("tg", chat, "")
	msg.ChatType, msg.Mentioned = channels.Group, false
	w := acceptOnly(t, h, ambientInbound(msg))
	if err := h.journal().Start(w.RecordID); err != nil {
		t.Fatal(err)
	}
	return w
}

// ambientOn turns ambient on in every group room of h's dispatcher.
func ambientOn(h *harness) {
	rt := *h.d.Runtime()
	rt.Room = func(in channels.Inbound) channels.Room {
		room := channels.DefaultRoom(in.Channel)
		room.Ambient = channels.AmbientConfig{On: true, Debounce: time.Minute, MaxBatch: 3, PerHour: 100}
		return room
	}
	h.d.SetRuntime(&rt)
}

// restartAmbient restarts h with ambient on in its group rooms, resumes
// the journal and waits for the lanes to drain.
func restartAmbient(t *testing.T, h *harness) {
	t.Helper()
	h.restart()
	ambientOn(h)
	if _, err := h.d.Resume(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.drained()
}

// TestAmbientTickRecoveredNeverPostsItsText: an ambient turn's final text
// is never sent (the agent speaks only through the message tool), also
// when the process died after appending it and before finishing the
// tick: the replayed tick is finished, nothing is posted and the model is
// not asked again.
func TestAmbientTickRecoveredNeverPostsItsText(t *testing.T) {
	h := newHarness(t, "", nil)
	w := ambientTick(t, h, "-31")
	appendInput(t, h, w, sessions.Message{Role: sessions.RoleAssistant, StopReason: "stop",
		Content: []sessions.Content{{Type: sessions.BlockText, Text: "(nothing worth adding; staying quiet)"}}})
	restartAmbient(t, h)
	if got := h.tg.texts(); len(got) != 0 {
		t.Errorf("a recovered ambient tick posted %q", got)
	}
	if n := len(h.m.requests()); n != 0 {
		t.Errorf("%d model calls for a tick whose turn had finished", n)
	}
	if st := h.journal().Stats(); st.Pending != 0 || st.Replies != 0 {
		t.Errorf("after recovery: %d records pending, %d replies stored", st.Pending, st.Replies)
	}
}

// TestAmbientTickDiedInMessageToolRunsNotAgain: the process died while an
// ambient turn's message tool call ran (the call is in the transcript, its
// result is not): the post may have reached the room, so the replayed
// tick is finished without running again — an unasked post is never
// repeated (at most once), where running the turn again could post it a
// second time.
func TestAmbientTickDiedInMessageToolRunsNotAgain(t *testing.T) {
	h := newHarness(t, "", nil)
	w := ambientTick(t, h, "-32")
	appendInput(t, h, w, sessions.Message{Role: sessions.RoleAssistant, StopReason: "toolUse",
		Content: []sessions.Content{{Type: sessions.BlockToolCall, ID: "call-1", Name: agents.MessageToolName,
			Arguments: json.RawMessage(`{"action":"reply","text":"Good point, Alice."}`)}}})
	restartAmbient(t, h)
	if got := h.tg.texts(); len(got) != 0 {
		t.Errorf("a recovered ambient tick posted %q", got)
	}
	if n := len(h.m.requests()); n != 0 {
		t.Errorf("%d model calls: the tick whose post may have been sent ran again", n)
	}
	if st := h.journal().Stats(); st.Pending != 0 {
		t.Errorf("after recovery: %d records pending", st.Pending)
	}
}
