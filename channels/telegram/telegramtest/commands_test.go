package telegramtest

import (
	"testing"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"github.com/google/go-cmp/cmp"
)

// TestMyCommandsWithTheLibrary: the fake answers the library's
// setMyCommands, getMyCommands and deleteMyCommands like the Bot API,
// per scope, and refuses a command name Telegram would refuse.
func TestMyCommandsWithTheLibrary(t *testing.T) {
	s := Start(t, Options{})
	bot, err := tgbotapi.NewBotAPIWithClient(s.Token(), s.URL+"/bot%s/%s", s.Client())
	if err != nil {
		t.Fatal(err)
	}
	private := tgbotapi.NewBotCommandScopeAllPrivateChats()
	group := tgbotapi.NewBotCommandScopeAllGroupChats()
	if _, err := bot.Request(tgbotapi.NewSetMyCommandsWithScope(private,
		tgbotapi.BotCommand{Command: "status", Description: "Session status"},
		tgbotapi.BotCommand{Command: "help", Description: "List the commands"})); err != nil {
		t.Fatal(err)
	}
	if _, err := bot.Request(tgbotapi.NewSetMyCommandsWithScope(group,
		tgbotapi.BotCommand{Command: "help", Description: "List the commands"})); err != nil {
		t.Fatal(err)
	}
	got, err := bot.GetMyCommandsWithConfig(tgbotapi.NewGetMyCommandsWithScope(private))
	if err != nil {
		t.Fatal(err)
	}
	want := []tgbotapi.BotCommand{{Command: "status", Description: "Session status"}, {Command: "help", Description: "List the commands"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("private menu (-want +got):\n%s", diff)
	}
	if got, err := bot.GetMyCommands(); err != nil || len(got) != 0 {
		t.Errorf("default scope menu %+v, %v: want empty", got, err)
	}
	if _, err := bot.Request(tgbotapi.NewSetMyCommands(tgbotapi.BotCommand{Command: "Bad-Name", Description: "x"})); err == nil {
		t.Error("an invalid command name was accepted")
	}
	if _, err := bot.Request(tgbotapi.NewDeleteMyCommandsWithScope(group)); err != nil {
		t.Fatal(err)
	}
	if got, err := bot.GetMyCommandsWithConfig(tgbotapi.NewGetMyCommandsWithScope(group)); err != nil || len(got) != 0 {
		t.Errorf("group menu after delete %+v, %v", got, err)
	}
	rec := s.MyCommands()
	if len(rec) != 3 || rec[0].Scope != "all_private_chats" || rec[1].Scope != "all_group_chats" || rec[2].Scope != "all_group_chats" {
		t.Errorf("recorded %+v", rec)
	}
}
