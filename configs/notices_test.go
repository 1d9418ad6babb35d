package configs

import (
	"slices"
	"strings"
	"testing"
)

// A costUsd budget with a model an agent runs that has no price is a
// notice naming the model, the key that uses it and where its price goes;
// priced models, the free echo provider and token-only budgets are none.
func TestNoticeCostBudgetOnUnpricedModel(t *testing.T) {
	providers := `
providers:
  local: {type: echo}
  openai:
    type: openai
    apiKey: sk-x
    models:
      gpt-4o: {price: {input: 2.5, output: 10}}
      gpt-4o-mini: {contextWindow: 128000}
agents:
  defaults: {model: {primary: openai/gpt-4o, fallbacks: [openai/gpt-4o-mini, local/echo]}}
  list: [{id: main}, {id: cheap, model: openai/o3}]
`
	for _, tc := range []struct {
		name, limits string
		want         []string // substrings, one notice each
	}{
		{"cost budget", "limits: {defaults: {sender: {daily: {costUsd: 1}}}}", []string{
			"openai/gpt-4o-mini (agents.defaults.model.fallbacks[0]) has no price (providers.openai.models.gpt-4o-mini.price)",
			"openai/o3 (agents.list[1].model.primary) has no price (providers.openai.models.o3.price)",
		}},
		{"an agent's cost budget", "limits: {agents: {cheap: {agent: {monthly: {costUsd: 50}}}}}", []string{"gpt-4o-mini", "openai/o3"}},
		{"token budget only", "limits: {defaults: {sender: {daily: {tokens: 1000}}}}", nil},
		{"no limits", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := LoadBytes([]byte(providers+tc.limits), nil)
			if err != nil {
				t.Fatal(err)
			}
			got := c.Notices()
			if len(got) != len(tc.want) {
				t.Fatalf("notices %q, want %d", got, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("notice %d = %q, want it to hold %q", i, got[i], w)
				}
			}
		})
	}
}

// A resetByChannel policy under a name no channel has (a typo) is a
// notice naming the key and the channels; the channels in any case are
// none (they match, as bindings do).
func TestNoticeResetByChannelOfNoChannel(t *testing.T) {
	c, err := LoadBytes([]byte(`
session:
  resetByChannel:
    telgram: {mode: idle, idleMinutes: 30}
    Discord: {mode: idle, idleMinutes: 60}
    web: {mode: daily, atHour: 4}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := c.Notices()
	if len(got) != 1 || !strings.Contains(got[0], "session.resetByChannel.telgram") ||
		!strings.Contains(got[0], "telegram, discord, web") {
		t.Fatalf("notices = %q, want one naming session.resetByChannel.telgram and the channels", got)
	}
}

// An account under dmPolicy open with an allowFrom list of ids (no "*")
// is a notice: open admits every sender, so the list restricts nothing,
// though it reads as if only they were let in. Open with "*", open
// without a list and allowlist with a list are none.
func TestNoticeAllowFromUnderOpenDMs(t *testing.T) {
	c, err := LoadBytes([]byte(`
channels:
  telegram:
    accounts:
      default: {token: "1:a", dmPolicy: open, allowFrom: ["123"]}
      star: {token: "2:b", dmPolicy: open, allowFrom: ["123", "*"]}
      bare: {token: "3:c", dmPolicy: open}
      listed: {token: "4:d", dmPolicy: allowlist, allowFrom: ["123"]}
  discord:
    accounts:
      default: {token: t, dmPolicy: open, allowFrom: ["<@42>"]}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := c.Notices()
	want := []string{"channels.telegram.accounts.default: dmPolicy open admits every sender", "channels.discord.accounts.default: dmPolicy open"}
	if len(got) != len(want) {
		t.Fatalf("notices %q, want %d", got, len(want))
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("notice %d = %q, want it to hold %q", i, got[i], w)
		}
	}
}

// TestNoticeKeyTheEnvironmentOverrides: a key both the file and a
// GATEWAY_* variable set is a notice naming the key as typed and the
// variable; a key only the environment sets is none.
func TestNoticeKeyTheEnvironmentOverrides(t *testing.T) {
	c, err := LoadBytes([]byte("stateDir: /tmp/x\nmessages: {queue: {mode: steer}}\n"),
		[]string{"GATEWAY_MESSAGES_QUEUE_MODE=collect", "GATEWAY_LOG_LEVEL=debug"})
	if err != nil {
		t.Fatal(err)
	}
	got := c.EnvShadowed()
	if len(got) != 1 || !strings.HasPrefix(got[0], "messages.queue.mode: set in the file and by GATEWAY_MESSAGES_QUEUE_MODE") {
		t.Fatalf("EnvShadowed = %q", got)
	}
	if !slices.Contains(c.Notices(), got[0]) {
		t.Fatalf("Notices %q lack %q", c.Notices(), got[0])
	}
}
