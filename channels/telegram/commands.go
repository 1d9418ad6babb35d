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

// SetCommands replaces the catalogue the command menus offer (a hot
// reload changed the reset triggers). While Run runs the menus are
// published again, in the background; otherwise Run publishes them. Safe
// for concurrent use; it does not block.
func (a *Adapter) SetCommands(cmds []channels.Command) {
	cmds = append([]channels.Command(nil), cmds...)
	a.menu.Store(&cmds)
	select {
	case a.menuChanged <- struct{}{}:
	default: // a publication is pending; it reads the newest catalogue
	}
}

// startCommandMenu publishes the command menus in the background, at once
// and again after each SetCommands until ctx ends, and returns a function
// that stops it and waits (Run may return before ctx ends). A failure is logged and not retried: the menu is a
// convenience, the commands work without it.
func (a *Adapter) startCommandMenu(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		select { // Run publishes the newest catalogue now
		case <-a.menuChanged:
		default:
		}
		for {
			a.publishMenus(ctx)
			select {
			case <-ctx.Done():
				return
			case <-a.menuChanged:
			}
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}

// publishMenus sets the menus of every scope to the catalogue in force.
// An empty catalogue publishes nothing (as before: no menu is configured).
func (a *Adapter) publishMenus(ctx context.Context) {
	cmds := *a.menu.Load()
	if len(cmds) == 0 {
		return
	}
	for _, scope := range []string{ScopePrivateChats, ScopeGroupChats} {
		err := a.setMyCommands(ctx, scope, menus(cmds)[scope])
		if err != nil && ctx.Err() == nil {
			a.log.Warn("command menu not published", zap.String("scope", scope), zap.Error(err))
		}
	}
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
