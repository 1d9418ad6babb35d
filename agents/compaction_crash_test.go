package agents

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// TestCompactionSurvivesCrashBeforeReply pins SPEC §3.4 on the files
// backend: a turn compacts before its model call (the compaction entry
// written, firstKeptEntryId the turn's message) and the process dies
// before the reply. The next start, on the same files, sends the model
// exactly what the first attempt sent: the summary, then the kept
// message, nothing summarised twice or lost.
func TestCompactionSurvivesCrashBeforeReply(t *testing.T) {
	dir := t.TempDir()
	d := Defaults{ContextWindow: 20000, Compaction: Compaction{ReserveTokens: 4000, KeepRecentTokens: 1}}
	failing := true
	p := &fakeProvider{name: "fake"}
	p.reply = func(n int, req llm.Request) (sessions.Message, error) {
		if failing && strings.Contains(lastUserText(req.Messages), "third ") {
			return sessions.Message{}, errors.New("the process died here")
		}
		return assistantText("ok"), nil
	}
	k := openDisk(t, dir, d, []Agent{{ID: "main"}}, p)
	key, _ := routing.PeerKey("main", "telegram", "", routing.Direct, "42")
	k.begin("main", key)
	ctx := context.Background()
	for _, text := range []string{"first ", "second ", "third "} {
		_, err := k.r.Run(ctx, Turn{AgentID: "main", Key: key, Inputs: []sessions.Message{user(text + strings.Repeat("x", 24000))}})
		if (err != nil) != (text == "third ") {
			t.Fatalf("%s: err = %v", text, err)
		}
	}
	sums := len(p.sums)
	if sums == 0 {
		t.Fatal("no summary call: the third turn did not compact first")
	}
	before := p.reqs[len(p.reqs)-1].Messages
	if err := k.mgr.Close(); err != nil {
		t.Fatal(err)
	}
	failing = false
	k2 := openDisk(t, dir, d, []Agent{{ID: "main"}}, p)
	res, err := k2.r.Run(ctx, Turn{AgentID: "main", Key: key})
	if err != nil || res.Text != "ok" {
		t.Fatalf("after the restart: %q, %v", res.Text, err)
	}
	if len(p.sums) != sums {
		t.Errorf("%d more summary calls, want the compaction kept, not redone", len(p.sums)-sums)
	}
	after := p.reqs[len(p.reqs)-1].Messages
	if len(after) != 1 || !strings.Contains(after[0].Text(), "<summary>") || !strings.Contains(after[0].Text(), "third ") {
		t.Fatalf("request after the restart: %d messages %.200q", len(after), after[0].Text())
	}
	if !reflect.DeepEqual(texts(before), texts(after)) {
		t.Errorf("request before the crash %q\nafter the restart %q", texts(before), texts(after))
	}
}

func texts(msgs []sessions.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Role) + ": " + m.Text()
	}
	return out
}
