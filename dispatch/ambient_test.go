package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	goopenai "github.com/sashabaranov/go-openai"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/limits"
	"github.com/gateway/gateway/sessions"
)

// ambientRoom is a Telegram group room with ambient on: batches of three
// messages (the window never ends first), the cheap model.
func ambientRoom() channels.Room {
	room := channels.DefaultRoom("telegram")
	room.Ambient = channels.AmbientConfig{On: true, Model: "fake/cheap", Debounce: time.Minute, MaxBatch: 3, PerHour: 100}
	return room
}

// ambientUsage is what every scripted model answer reports.
var ambientUsage = goopenai.Usage{PromptTokens: 100, CompletionTokens: 5, TotalTokens: 105}

// ambientOutcomes reads gateway_ambient_batches_total.
func (r *roomRig) ambientOutcomes(outcome string) int {
	return int(testutil.ToFloat64(r.d.opts.Metrics.Ambient.WithLabelValues(outcome)))
}

// roomTokens is what the limiter charged today to the group's room budget
// (flushed to the backend first).
func (r *roomRig) roomTokens(ctx context.Context) int64 {
	r.t.Helper()
	if err := r.lim.Flush(ctx); err != nil {
		r.t.Fatal(err)
	}
	day := time.Now().UTC().Truncate(24 * time.Hour)
	var keys []sessions.LimitKey
	for _, d := range []time.Time{day.Add(-24 * time.Hour), day} { // a run across midnight
		keys = append(keys, sessions.LimitKey{Scope: limits.ScopeRoom, Subject: fmt.Sprintf("main/telegram:%d", tgGroup), Period: "day", Start: d.Unix()})
	}
	got, err := r.mgr.Backend().Limits().LimitUsage(ctx, keys)
	if err != nil {
		r.t.Fatal(err)
	}
	var n int64
	for _, v := range got {
		n += v.Tokens
	}
	return n
}

// TestAmbientRoomSpeaksOnceInTenBatches is the acceptance: in an
// ambient room a scripted model stays silent for 9 batches and speaks on
// the 10th through the message tool: exactly one message reaches the chat
// (what the model wrote as its final text never does), the room's budget
// is charged for every model call of the 10 batches, the batches run on
// the room's ambient model, a sender the group does not admit never
// reaches the agent, and a mention still gets a normal answer on the
// session's model.
func TestAmbientRoomSpeaksOnceInTenBatches(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	cfg := limits.Default()
	cfg.Defaults.Room = limits.Scope{Daily: limits.Budget{Tokens: 10_000_000}}
	r := newRoomRig(t, &roomRig{model: model, tg: tg, access: tgGroupAccess(), room: ambientRoom(),
		agents: []agents.Agent{{ID: "main"}}, limits: &cfg}) // the message tool is not in tools.allow: ambient offers it
	ctx := rigCtx(t)
	u := ambientUsage
	model.SetReply(func(n int, req openaitest.Request) openaitest.Reply {
		switch {
		case n < 9:
			return openaitest.Reply{Text: "nothing worth saying", Usage: &u}
		case n == 9:
			return openaitest.Reply{ToolCalls: []openaitest.ToolCall{{ID: "c1", Name: "message",
				Arguments: `{"action":"reply","text":"The deploy doc is in the wiki."}`}}, Usage: &u}
		case n == 10:
			return openaitest.Reply{Text: "posted it", Usage: &u}
		}
		return openaitest.Reply{Text: "answer", Usage: &u}
	})
	var last int // the newest message of the current batch
	for b := 1; b <= 10; b++ {
		for i := 1; i <= 3; i++ {
			from, name := alice, "Alice"
			if i == 2 {
				from, name = bob, "Bob"
				if b == 5 { // not admitted by the group: never kept, never a batch's
					tg.AddMessage(telegramtest.Message{ChatID: tgGroup, FromID: mallory, FromName: "Mallory", Text: "mallory secret"})
				}
			}
			_, last = tg.AddMessage(telegramtest.Message{ChatID: tgGroup, FromID: from, FromName: name, Text: fmt.Sprintf("batch %d line %d", b, i)})
		}
		req := waitModel(t, model, b)
		if req.Body.Model != "cheap" {
			t.Fatalf("batch %d ran on model %q, want the room's ambient model cheap", b, req.Body.Model)
		}
		text := strings.Join(userTexts(req), "\n")
		if !inOrder(text, fmt.Sprintf("batch %d line 1", b), fmt.Sprintf("batch %d line 3", b), "[Room events]") {
			t.Fatalf("batch %d: model input lacks its events:\n%s", b, text)
		}
		if b > 1 && strings.Contains(req.LastUserText(), fmt.Sprintf("batch %d line", b-1)) {
			t.Fatalf("batch %d repeats the previous batch's messages:\n%s", b, req.LastUserText())
		}
		if !hasTool(req, "message") {
			t.Fatalf("batch %d: the message tool was not offered", b)
		}
	}
	waitModel(t, model, 11)
	eventually(t, "ten batches settled", func() bool { return r.ambientOutcomes(AmbientSilent)+r.ambientOutcomes(AmbientSpoke) == 10 })
	r.drained()
	sent := tg.Sent()
	if len(sent) != 1 || sent[0].Text != "The deploy doc is in the wiki." || sent[0].ReplyTo != last {
		t.Fatalf("sent %+v, want exactly the tool's reply, answering the batch's newest message %d", sent, last)
	}
	if got := r.ambientOutcomes(AmbientSilent); got != 9 || r.ambientOutcomes(AmbientSpoke) != 1 {
		t.Errorf("outcomes: silent %d spoke %d, want 9 and 1", got, r.ambientOutcomes(AmbientSpoke))
	}
	if got, want := r.roomTokens(ctx), int64(11*ambientUsage.TotalTokens); got != want {
		t.Errorf("room budget charged %d tokens, want %d (11 model calls of 10 batches)", got, want)
	}
	if modelSawOpenAI(model, "mallory secret") {
		t.Error("a message of a sender the group does not admit reached the agent")
	}

	_, _ = tg.AddMessage(telegramtest.Message{ChatID: tgGroup, FromID: alice, FromName: "Alice", Text: mention(tg, "what do you think?")})
	req := waitModel(t, model, 12)
	if req.Body.Model != "m" {
		t.Errorf("the mention ran on %q, want the session's model m", req.Body.Model)
	}
	if _, err := tg.WaitSent(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if s := tg.Sent(); s[1].Text != "answer" {
		t.Errorf("the mention was answered %q, want the model's answer", s[1].Text)
	}
}

// hasTool reports whether req offered the named tool.
func hasTool(req openaitest.Request, name string) bool {
	for _, tl := range req.Body.Tools {
		if tl.Function != nil && tl.Function.Name == name {
			return true
		}
	}
	return false
}

// modelSawOpenAI reports whether any request to s held text.
func modelSawOpenAI(s *openaitest.Server, text string) bool {
	for _, req := range s.Requests() {
		b, _ := json.Marshal(req.Body.Messages)
		if strings.Contains(string(b), text) {
			return true
		}
	}
	return false
}

// TestAmbientBatchesBoundedPerHourAndByLimits: a room's ambientPerHour
// and the room's rate limit refuse batches past them before the model
// runs; the refused batch's message stays kept for the next turn.
func TestAmbientBatchesBoundedPerHourAndByLimits(t *testing.T) {
	for _, tc := range []struct {
		name    string
		perHour int
		rate    string
		refused string
		runs    int
	}{
		{name: "hourly cap", perHour: 2, refused: AmbientHourlyCap, runs: 2},
		{name: "room rate", perHour: 100, rate: "1/min", refused: AmbientThrottled, runs: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := telegramtest.Start(t, telegramtest.Options{})
			model := openaitest.NewServer(t)
			room := ambientRoom()
			room.Ambient.MaxBatch, room.Ambient.PerHour = 1, tc.perHour // every message is a batch
			cfg := limits.Default()
			cfg.Defaults.Room = limits.Scope{Rate: tc.rate}
			r := newRoomRig(t, &roomRig{model: model, tg: tg, access: tgGroupAccess(), room: room, limits: &cfg})
			model.SetReply(func(int, openaitest.Request) openaitest.Reply { return openaitest.Reply{Text: "quiet"} })
			for i := 1; i <= tc.runs+1; i++ {
				tg.AddMessage(telegramtest.Message{ChatID: tgGroup, FromID: alice, FromName: "Alice", Text: fmt.Sprintf("chatter %d", i)})
				eventually(t, "batch settled", func() bool {
					return r.ambientOutcomes(AmbientSilent)+r.ambientOutcomes(tc.refused) == i
				})
			}
			if got := r.ambientOutcomes(tc.refused); got != 1 {
				t.Errorf("%s batches = %d, want 1", tc.refused, got)
			}
			if got := len(model.Requests()); got != tc.runs {
				t.Errorf("model calls = %d, want %d", got, tc.runs)
			}
			r.drained()
			if n := tg.SentCount(); n != 0 {
				t.Errorf("%d messages sent by silent or refused batches", n)
			}
			key := fmt.Sprintf("agent:main:telegram:group:%d", tgGroup)
			if n := r.mgr.History().Len(key); n != 1 {
				t.Errorf("room history holds %d messages, want the refused batch's 1 kept for the next turn", n)
			}
		})
	}
}

// TestAmbientBatchSurvivesRestart: a batch held in its window when the
// daemon stops is pending in the journal and runs at the next start with
// every message kept; it sends nothing.
func TestAmbientBatchSurvivesRestart(t *testing.T) {
	tg := telegramtest.Start(t, telegramtest.Options{})
	model := openaitest.NewServer(t)
	room := ambientRoom()
	room.Ambient.MaxBatch = 10
	r := newRoomRig(t, &roomRig{model: model, tg: tg, access: tgGroupAccess(), room: room})
	model.SetReply(func(int, openaitest.Request) openaitest.Reply { return openaitest.Reply{Text: "quiet"} })
	tg.AddMessage(telegramtest.Message{ChatID: tgGroup, FromID: alice, FromName: "Alice", Text: "first words"})
	upd, _ := tg.AddMessage(telegramtest.Message{ChatID: tgGroup, FromID: bob, FromName: "Bob", Text: "second words"})
	if err := tg.WaitConfirmed(rigCtx(t), upd); err != nil {
		t.Fatal(err)
	}
	if st := r.mgr.Journal().Stats(); st.Pending != 1 {
		t.Fatalf("pending records = %d, want the held batch's 1", st.Pending)
	}
	r.stop()
	if n := len(model.Requests()); n != 0 {
		t.Fatalf("the held batch ran before its window: %d model calls", n)
	}
	r.start()
	req := waitModel(t, model, 1)
	if !inOrder(strings.Join(userTexts(req), "\n"), "first words", "second words", "[Room events]") {
		t.Fatalf("the resumed batch's input lacks its events:\n%s", strings.Join(userTexts(req), "\n"))
	}
	eventually(t, "batch settled", func() bool { return r.ambientOutcomes(AmbientSilent) == 1 })
	r.drained()
	if n := tg.SentCount(); n != 0 {
		t.Errorf("%d messages sent by a silent batch", n)
	}
}
