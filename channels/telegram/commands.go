package telegram

import (
	"context"
	"fmt"
	"sync"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
)

// Command menu scopes (Bot API BotCommandScope types).
const (
	ScopePrivateChats = "all_private_chats"
	ScopeGroupChats   = "all_group_chats"
)

// menus are the command lists the bot publishes: every command in private
// chats, the catalogue's group commands in groups (the others still work
// when typed).
func menus(cmds []channels.Command) map[string][]tgbotapi.BotCommand {
	private := make([]tgbotapi.BotCommand, 0, len(cmds))
	var group []tgbotapi.BotCommand
	for _, c := range cmds {
		bc := tgbotapi.BotCommand{Command: c.Name, Description: c.Description}
		private = append(private, bc)
		if c.Group {
			group = append(group, bc)
		}
	}
	return map[string][]tgbotapi.BotCommand{ScopePrivateChats: private, ScopeGroupChats: group}
}

// startCommandMenu publishes the command menus once, in the background,
// and returns a function that waits for it. A failure is logged and not
// retried: the menu is a convenience, the commands work without it.
func (a *Adapter) startCommandMenu(ctx context.Context) (wait func()) {
	cmds := a.opts.Commands
	if cmds == nil {
		cmds = channels.Commands()
	}
	if len(cmds) == 0 {
		return func() {}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for _, scope := range []string{ScopePrivateChats, ScopeGroupChats} {
			err := a.setMyCommands(ctx, scope, menus(cmds)[scope])
			if err != nil && ctx.Err() == nil {
				a.log.Warn("command menu not published", zap.String("scope", scope), zap.Error(err))
			}
		}
	})
	return wg.Wait
}

// setMyCommands replaces the bot's command list for scope.
func (a *Adapter) setMyCommands(ctx context.Context, scope string, cmds []tgbotapi.BotCommand) error {
	p := tgbotapi.Params{}
	if err := p.AddInterface("commands", cmds); err != nil {
		return fmt.Errorf("telegram: setMyCommands: %w", err)
	}
	if err := p.AddInterface("scope", tgbotapi.BotCommandScope{Type: scope}); err != nil {
		return fmt.Errorf("telegram: setMyCommands: %w", err)
	}
	_, err := a.call(ctx, "setMyCommands", p)
	return err
}
