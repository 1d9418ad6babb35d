package dispatch

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/sessions"
)

// longReply is a model answer Telegram gets as three messages.
var longReply = strings.Repeat("a", 4000) + "\n\n" + strings.Repeat("b", 4000) + "\n\n" + strings.Repeat("c", 4000)

// replyTos are the reply_to_message_id of each message the fake got.
func replyTos(srv *telegramtest.Server) []int {
	var out []int
	for _, s := range srv.Sent() {
		out = append(out, s.ReplyTo)
	}
	return out
}

// TestReplyToModeOnMultiChunkReply: the room's replyToMode decides which
// chunks of a three-message reply quote the message it answers.
func TestReplyToModeOnMultiChunkReply(t *testing.T) {
	for mode, quoted := range map[string][]bool{
		channels.ReplyToFirst: {true, false, false},
		channels.ReplyToAll:   {true, true, true},
		channels.ReplyToOff:   {false, false, false},
	} {
		t.Run(mode, func(t *testing.T) {
			h := newHarness(t, "", &model{reply: func(llm.Request) (string, error) { return longReply, nil }})
			room := channels.DefaultRoom("telegram")
			room.ReplyToMode = mode
			srv := withTelegram(t, h, room)
			msg := tgMsg(-100778, "explain")
			h.handle(msg)
			h.drained()
			id, _ := strconv.Atoi(msg.MessageID)
			got := replyTos(srv)
			if len(got) != 3 {
				t.Fatalf("%d messages, want 3", len(got))
			}
			for i, q := range quoted {
				if want := map[bool]int{true: id, false: 0}[q]; got[i] != want {
					t.Errorf("chunk %d replies to %d, want %d (all: %v)", i, got[i], want, got)
				}
			}
		})
	}
}

// TestReplyToModeKeptInOutbox: a reply stored before a crash keeps its
// room's replyToMode; the chunks sent after the restart quote as before.
func TestReplyToModeKeptInOutbox(t *testing.T) {
	h := newHarness(t, "", nil)
	room := channels.DefaultRoom("telegram")
	room.ReplyToMode = channels.ReplyToAll
	srv := withTelegram(t, h, room)
	msg := tgMsg(-100779, "explain")
	w := acceptOnly(t, h, msg)
	out := outboundFor(msg)
	out.Answers, out.ReplyToMode = []string{msg.MessageID}, channels.ReplyToAll
	target, _ := json.Marshal(out)
	rp := sessions.Reply{ID: "r-mode", Records: []string{w.RecordID}, AgentID: w.AgentID,
		SessionKey: w.Key.String(), Target: target, Chunks: []string{"one", "two", "three"}}
	if err := h.journal().Ready(rp); err != nil {
		t.Fatal(err)
	}
	if err := h.journal().Sent(rp.ID, 1); err != nil {
		t.Fatal(err)
	}
	h.restart()
	a, err := telegram.New("default", telegram.Config{Token: srv.Token(), APIRoot: srv.URL},
		telegram.Options{Logger: zaptest.NewLogger(t), HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	h.d.Register(a)
	if _, err := h.d.Resume(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.drained()
	id, _ := strconv.Atoi(msg.MessageID)
	sent := srv.Sent()
	if len(sent) != 2 || sent[0].Text != "two" || sent[0].ReplyTo != id || sent[1].ReplyTo != id {
		t.Fatalf("resumed chunks %+v, want two and three, both replying to %d", sent, id)
	}
}
