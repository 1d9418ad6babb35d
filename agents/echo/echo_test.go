package echo

import (
	"context"
	"strings"
	"testing"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

func TestStreamEchoesLastUserMessage(t *testing.T) {
	p, err := New(Config{Name: "local", Provider: llm.ProviderConfig{Type: "echo"}})
	if err != nil {
		t.Fatal(err)
	}
	var deltas []string
	msg, err := p.Stream(context.Background(), llm.Request{Model: "echo", Messages: []sessions.Message{
		{Role: sessions.RoleUser, Content: []sessions.Content{{Type: "text", Text: "first"}}},
		{Role: sessions.RoleAssistant, Content: []sessions.Content{{Type: "text", Text: "echo: first"}}},
		{Role: sessions.RoleUser, Content: []sessions.Content{{Type: "text", Text: "héllo wörld"}}},
	}}, func(e llm.Event) { deltas = append(deltas, e.TextDelta) })
	if err != nil {
		t.Fatal(err)
	}
	if got, want := msg.Text(), "echo: héllo wörld"; got != want {
		t.Fatalf("text = %q, want %q", got, want)
	}
	if len(deltas) < 2 || strings.Join(deltas, "") != msg.Text() {
		t.Fatalf("deltas %q do not stream the reply", deltas)
	}
	if msg.Usage == nil || msg.Usage.Input == 0 || msg.Usage.Output == 0 {
		t.Fatalf("usage = %+v, want estimates", msg.Usage)
	}
	if msg.Provider != "local" || msg.Model != "echo" || msg.StopReason != llm.StopEnd || msg.Role != sessions.RoleAssistant {
		t.Fatalf("message metadata = %+v", msg)
	}
}

func TestStreamCancelled(t *testing.T) {
	p, _ := New(Config{Name: "local"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Stream(ctx, llm.Request{}, nil); err == nil {
		t.Fatal("want an error on a cancelled context")
	}
}

func TestValidate(t *testing.T) {
	if _, err := New(Config{Name: "x", Provider: llm.ProviderConfig{Type: "openai"}}); err == nil {
		t.Fatal("want an error for a non-echo type")
	}
	if _, err := New(Config{}); err == nil {
		t.Fatal("want an error for a missing name")
	}
}
