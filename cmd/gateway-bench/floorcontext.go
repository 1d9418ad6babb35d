package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	goopenai "github.com/sashabaranov/go-openai"
)

// The context floor (-floor -floor-context) is the floor bot asking the
// model what the gateway asks it: the gateway's system messages, tools
// and request options, each chat's whole history (kept in memory, never
// on disk) and the user's message framed as the gateway frames it. The
// plain floor sends the message alone, so the fake model decodes a tenth
// of what it decodes for the gateway, on the same two cores (stop 53,
// §D): the gateway's ratio to the plain floor measures that decoding as
// much as the persistence. Against the context floor, what differs is
// what the gateway keeps: the files and postgres backends' cost alone.
//
// What the gateway asks is captured, not rebuilt: captureContext runs the
// gateway on the same fakes for two turns of one chat and keeps its
// second request as the template (floorTemplate).

// floorTemplate is what the context floor sends around a chat's history.
type floorTemplate struct {
	// Request is the gateway's second request with its messages cut to
	// the leading system ones; its tools' parameters are kept verbatim.
	Request goopenai.ChatCompletionRequest `json:"request"`
	// UserPrefix and UserSuffix frame a user's text as the gateway's
	// user messages frame it.
	UserPrefix string `json:"userPrefix"`
	UserSuffix string `json:"userSuffix"`
}

// floorContextFlags names what -floor-context lacks: it is a kind of
// floor, and its template is captured from the gateway.
func floorContextFlags(o options) error {
	switch {
	case o.floorContext && !o.floor:
		return errors.New("-floor-context runs the context floor: add -floor")
	case o.floorContext && o.gateway == "":
		return errors.New("-floor-context captures what the gateway asks the model: set -gateway")
	}
	return nil
}

// captureProbe is the text of the captured turns' second message; the
// framing of a user message is what surrounds it.
const captureProbe = "m1"

// captureContext runs the gateway (files backend, in a directory of its
// own) on fresh fakes for two messages of one chat, and writes the
// template taken from its second model request to a file in dir. o.gateway
// is set (floorContextFlags, or -mode compare's own check).
func captureContext(ctx context.Context, o options, dir string) (string, error) {
	tg, model := newFakes()
	defer tg.Close()
	defer model.Close()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	d, err := startReady(wctx, o.gateway, "capture", daemonSpec{dir: filepath.Join(dir, "capture"), tg: tg,
		modelURL: model.BaseURL(), streaming: "off", maxConcurrent: o.maxConcurrent})
	if d != nil {
		defer d.Stop()
	}
	if err != nil {
		return "", fmt.Errorf("capture: %w", err)
	}
	for i, text := range []string{"m0", captureProbe} {
		tg.DM(10000, text)
		if _, err := tg.WaitSent(wctx, i+1); err != nil {
			return "", fmt.Errorf("capture: the gateway answered %d of %d messages: %w", tg.SentCount(), i+1, err)
		}
	}
	reqs := model.Requests()
	if len(reqs) != 2 {
		return "", fmt.Errorf("capture: the gateway made %d model requests for two messages, want 2", len(reqs))
	}
	t, err := templateOf(reqs[1].Body)
	if err != nil {
		return "", fmt.Errorf("capture: %w", err)
	}
	b, err := json.Marshal(t)
	if err != nil {
		return "", fmt.Errorf("capture: %w", err)
	}
	path := filepath.Join(dir, "floor-context.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return "", fmt.Errorf("capture: %w", err)
	}
	return path, nil
}

// templateOf cuts req, the request of a chat's second turn, to the
// template: its leading system messages, and the framing of its last user
// message around captureProbe. Anything else in it (the history of the
// first turn) is what the context floor keeps itself.
func templateOf(req goopenai.ChatCompletionRequest) (floorTemplate, error) {
	var t floorTemplate
	n := 0
	for n < len(req.Messages) && req.Messages[n].Role == goopenai.ChatMessageRoleSystem {
		n++
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role != goopenai.ChatMessageRoleUser || len(last.MultiContent) > 0 {
		return t, fmt.Errorf("the request ends with a %s message (multi-part %t), want a text user message", last.Role, len(last.MultiContent) > 0)
	}
	i := strings.LastIndex(last.Content, captureProbe)
	if i < 0 {
		return t, fmt.Errorf("the last user message %q lacks the text sent, %q", last.Content, captureProbe)
	}
	t.UserPrefix, t.UserSuffix = last.Content[:i], last.Content[i+len(captureProbe):]
	t.Request = req
	t.Request.Messages = append([]goopenai.ChatCompletionMessage(nil), req.Messages[:n]...)
	return t, nil
}

// loadTemplate reads the file captureContext wrote.
func loadTemplate(path string) (*floorTemplate, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("floor context: %w", err)
	}
	var t floorTemplate
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("floor context %s: %w", path, err)
	}
	if t.Request.Model == "" || !t.Request.Stream {
		return nil, fmt.Errorf("floor context %s: the request names no model or is not streamed: not a template captureContext wrote", path)
	}
	for i, tool := range t.Request.Tools {
		if tool.Function == nil {
			continue
		}
		raw, err := json.Marshal(tool.Function.Parameters)
		if err != nil {
			return nil, fmt.Errorf("floor context %s: tool %s: %w", path, tool.Function.Name, err)
		}
		// Parameters decoded into maps would be encoded again at every
		// turn; the gateway writes its tools from a memo (agents/openai).
		f := *tool.Function
		f.Parameters = json.RawMessage(raw)
		t.Request.Tools[i].Function = &f
	}
	return &t, nil
}

// frame is text as the gateway frames a user's message.
func (t *floorTemplate) frame(text string) string { return t.UserPrefix + text + t.UserSuffix }

// chatHistory is the context floor's memory: each chat's turns so far.
type chatHistory struct {
	mu sync.Mutex
	m  map[int64][]goopenai.ChatCompletionMessage
}

// request is t's request for a turn of chat answering text: the system
// messages, the chat's history, and text framed as the gateway frames it.
func (h *chatHistory) request(t *floorTemplate, chat int64, text string) goopenai.ChatCompletionRequest {
	h.mu.Lock()
	past := h.m[chat]
	h.mu.Unlock()
	req := t.Request
	msgs := make([]goopenai.ChatCompletionMessage, 0, len(req.Messages)+len(past)+1)
	msgs = append(msgs, req.Messages...)
	msgs = append(msgs, past...)
	req.Messages = append(msgs, goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleUser, Content: t.frame(text)})
	return req
}

// add keeps a turn of chat: the user's framed text and the answer.
func (h *chatHistory) add(t *floorTemplate, chat int64, text, answer string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[int64][]goopenai.ChatCompletionMessage{}
	}
	h.m[chat] = append(h.m[chat],
		goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleUser, Content: t.frame(text)},
		goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleAssistant, Content: answer})
}
