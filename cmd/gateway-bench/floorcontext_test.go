package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"
)

// TestTemplateOf: the template keeps the request's options, tools and
// leading system messages, drops the history, and frames a user's text as
// the captured request framed the probe; a request that does not end with
// the probe's user message is refused, naming what it ends with.
func TestTemplateOf(t *testing.T) {
	tool := goopenai.Tool{Type: goopenai.ToolTypeFunction, Function: &goopenai.FunctionDefinition{Name: "sessions_list",
		Parameters: map[string]any{"type": "object"}}}
	req := goopenai.ChatCompletionRequest{Model: "bench", Stream: true, Tools: []goopenai.Tool{tool},
		StreamOptions: &goopenai.StreamOptions{IncludeUsage: true},
		Messages: []goopenai.ChatCompletionMessage{
			{Role: goopenai.ChatMessageRoleSystem, Content: "be brief"},
			{Role: goopenai.ChatMessageRoleUser, Content: "[Ann] m0 (dm)"},
			{Role: goopenai.ChatMessageRoleAssistant, Content: "ack m0"},
			{Role: goopenai.ChatMessageRoleUser, Content: "[Ann] " + captureProbe + " (dm)"},
		}}
	tm, err := templateOf(req)
	if err != nil {
		t.Fatal(err)
	}
	if len(tm.Request.Messages) != 1 || tm.Request.Messages[0].Content != "be brief" {
		t.Errorf("template messages %+v, want the system message alone", tm.Request.Messages)
	}
	if tm.UserPrefix != "[Ann] " || tm.UserSuffix != " (dm)" {
		t.Errorf("framing %q…%q, want %q…%q", tm.UserPrefix, tm.UserSuffix, "[Ann] ", " (dm)")
	}
	if len(tm.Request.Tools) != 1 || !tm.Request.Stream || tm.Request.StreamOptions == nil || tm.Request.Model != "bench" {
		t.Errorf("template request lost the options or tools: %+v", tm.Request)
	}
	if len(req.Messages) != 4 {
		t.Errorf("templateOf changed the captured request: %d messages", len(req.Messages))
	}

	req.Messages = append(req.Messages, goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleAssistant, Content: "x"})
	if _, err := templateOf(req); err == nil || !strings.Contains(err.Error(), "assistant") {
		t.Errorf("a request ending with an answer: err %v, want one naming the assistant message", err)
	}
	req.Messages[len(req.Messages)-1] = goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleUser, Content: "other"}
	if _, err := templateOf(req); err == nil || !strings.Contains(err.Error(), `"other"`) {
		t.Errorf("a last user message without the probe: err %v, want one quoting it", err)
	}
}

// TestFloorContextAsksWhatTheGatewayAsks runs the context floor child on
// a template and checks what the fake model received: each turn the
// template's system message and tools, the chat's earlier turns in order
// (its own chat's only) and the framed message; every message answered
// once.
func TestFloorContextAsksWhatTheGatewayAsks(t *testing.T) {
	const n, chats = 12, 3
	tm := floorTemplate{UserPrefix: "<", UserSuffix: ">", Request: goopenai.ChatCompletionRequest{Model: "bench", Stream: true,
		StreamOptions: &goopenai.StreamOptions{IncludeUsage: true},
		Messages:      []goopenai.ChatCompletionMessage{{Role: goopenai.ChatMessageRoleSystem, Content: "be brief"}},
		Tools: []goopenai.Tool{{Type: goopenai.ToolTypeFunction, Function: &goopenai.FunctionDefinition{Name: "sessions_list",
			Parameters: map[string]any{"type": "object", "properties": map[string]any{"limit": map[string]any{"type": "integer"}}}}}}}}
	b, err := json.Marshal(tm)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "floor-context.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	tg, model := newFakes()
	defer tg.Close()
	defer model.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d, err := startReady(ctx, "", "floor", daemonSpec{dir: dir, tg: tg, modelURL: model.BaseURL(),
		streaming: "off", maxConcurrent: 2, floor: true, floorContext: path})
	if d != nil {
		defer d.Stop()
	}
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		tg.DM(int64(10000+i%chats), "m"+strconv.Itoa(i))
	}
	if _, err := tg.WaitSent(ctx, n); err != nil {
		t.Fatalf("%d of %d answered: %v", tg.SentCount(), n, err)
	}
	reqs := model.Requests()
	if len(reqs) != n {
		t.Fatalf("%d model requests, want %d", len(reqs), n)
	}
	for _, r := range reqs {
		msgs := r.Body.Messages
		last := msgs[len(msgs)-1].Content
		i := indexOf(strings.Trim(last, "<>"))
		if i < 0 || last != "<m"+strconv.Itoa(i)+">" {
			t.Errorf("last message %q, want a framed bench message", last)
			continue
		}
		if msgs[0].Role != goopenai.ChatMessageRoleSystem || msgs[0].Content != "be brief" || len(r.Body.Tools) != 1 {
			t.Errorf("request for m%d lacks the template's system message or tool: %+v", i, r.Body)
		}
		// The chat's earlier messages, i-chats, i-2·chats, …, each with its answer.
		var want []string
		for j := i % chats; j < i; j += chats {
			want = append(want, "<m"+strconv.Itoa(j)+">", "ack <m"+strconv.Itoa(j)+">")
		}
		var got []string
		for _, m := range msgs[1 : len(msgs)-1] {
			got = append(got, m.Content)
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("history for m%d = %q, want %q", i, got, want)
		}
	}
}

// TestCompareCapturesTheGatewaysRequest builds the gateway and runs a
// small compare (one round: floor, context floor, files): the template is
// taken from the gateway's own second request (its tools, no history),
// and every run answers each message once (runTraffic fails otherwise).
func TestCompareCapturesTheGatewaysRequest(t *testing.T) {
	dir := t.TempDir()
	gateway := filepath.Join(dir, "gateway")
	if out, err := exec.Command("go", "build", "-o", gateway, "../gateway").CombinedOutput(); err != nil {
		t.Fatalf("building the gateway: %v\n%s", err, out)
	}
	o := options{gateway: gateway, mode: "compare", runs: 1, n: 30, chats: 3, timeout: 60 * time.Second, streaming: "off", maxConcurrent: 4}
	path, err := captureContext(context.Background(), o, dir)
	if err != nil {
		t.Fatal(err)
	}
	tm, err := loadTemplate(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(tm.Request.Tools) == 0 || !tm.Request.Stream {
		t.Errorf("template from the gateway has %d tools, stream %t: want its tools, streamed", len(tm.Request.Tools), tm.Request.Stream)
	}
	for _, m := range tm.Request.Messages {
		if m.Role != goopenai.ChatMessageRoleSystem {
			t.Errorf("template keeps a %s message %q: want system messages only", m.Role, m.Content)
		}
	}
	if err := compare(context.Background(), o); err != nil {
		t.Fatal(err)
	}
}

// TestFloorContextFlags: -floor-context without -floor or without
// -gateway is refused with an error naming the flag to add; a template
// file that is not one captureContext wrote is refused when loaded.
func TestFloorContextFlags(t *testing.T) {
	for o, want := range map[options]string{
		{floorContext: true, gateway: "/tmp/gateway"}: "add -floor",
		{floorContext: true, floor: true}:             "set -gateway",
	} {
		if err := floorContextFlags(o); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: err %v, want one saying %q", o, err, want)
		}
	}
	if err := floorContextFlags(options{floorContext: true, floor: true, gateway: "/tmp/gateway"}); err != nil {
		t.Errorf("a whole -floor -floor-context -gateway refused: %v", err)
	}
	path := filepath.Join(t.TempDir(), "t.json")
	if err := os.WriteFile(path, []byte(`{"request":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadTemplate(path); err == nil || !strings.Contains(err.Error(), "no model") {
		t.Errorf("a template without a model: err %v, want one saying so", err)
	}
}
