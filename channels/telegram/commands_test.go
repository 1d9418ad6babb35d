package telegram_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/telegram"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// TestCommandMenuPublishedAtStart: the adapter publishes the catalogue as
// the bot's command menu once at start, every command in private chats,
// the group commands in groups.
func TestCommandMenuPublishedAtStart(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	startPolling(t, srv, baseConfig(srv))
	got, err := srv.WaitMyCommands(testCtx(t), 2)
	if err != nil {
		t.Fatalf("menus set: %+v: %v", got, err)
	}
	var private, group []telegramtest.BotCommand
	for _, c := range channels.Commands() {
		bc := telegramtest.BotCommand{Command: c.Name, Description: c.Description}
		private = append(private, bc)
		if c.Group {
			group = append(group, bc)
		}
	}
	want := []telegramtest.MyCommands{
		{Scope: telegram.ScopePrivateChats, Commands: private},
		{Scope: telegram.ScopeGroupChats, Commands: group},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("menus (-want +got):\n%s", diff)
	}
	names := map[string]bool{}
	for _, c := range private {
		names[c.Command] = true
	}
	for _, n := range []string{"new", "reset", "compact", "status", "queue", "stop", "sessions", "switch", "history", "delete", "help"} {
		if !names[n] {
			t.Errorf("/%s missing from the private menu", n)
		}
	}
	if len(group) == 0 || len(group) >= len(private) {
		t.Errorf("group menu has %d commands, private %d: want a non-empty subset", len(group), len(private))
	}
}

// TestCommandMenuFailureIsNotFatal: a refused setMyCommands is logged, the
// adapter keeps receiving messages, and the call is not repeated.
func TestCommandMenuFailureIsNotFatal(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	srv.FailNext("setMyCommands", telegramtest.Failure{Code: 500}, telegramtest.Failure{Code: 400})
	_, rec := startPolling(t, srv, baseConfig(srv))
	if err := srv.WaitCalls(testCtx(t), "setMyCommands", 2); err != nil {
		t.Fatal(err)
	}
	u, _ := srv.AddMessage(telegramtest.Message{ChatID: alice, FromName: "Alice", Text: "still here"})
	waitConfirmed(t, srv, u)
	if got := rec.accepted(); len(got) != 1 || got[0].Text != "still here" {
		t.Errorf("accepted %+v, want the message", got)
	}
	if n := srv.Calls("setMyCommands"); n != 2 {
		t.Errorf("setMyCommands called %d times, want 2 (once per scope, no retry loop)", n)
	}
	if got := srv.MyCommands(); len(got) != 0 {
		t.Errorf("menus recorded after failures: %+v", got)
	}
}

// TestCommandMenuEmptyCatalogue: an empty catalogue publishes nothing.
func TestCommandMenuEmptyCatalogue(t *testing.T) {
	srv := telegramtest.Start(t, telegramtest.Options{})
	rec := newRecorder()
	cfg := baseConfig(srv)
	a, err := telegram.New("default", cfg, telegram.Options{HTTPClient: srv.Client(), Commands: []channels.Command{}})
	if err != nil {
		t.Fatal(err)
	}
	run(t, a, rec.handle)
	u, _ := srv.AddMessage(telegramtest.Message{ChatID: alice, FromName: "Alice", Text: "hi"})
	waitConfirmed(t, srv, u)
	if n := srv.Calls("setMyCommands"); n != 0 {
		t.Errorf("setMyCommands called %d times, want 0", n)
	}
}
