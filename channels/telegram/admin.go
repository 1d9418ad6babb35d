package telegram

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/gateway/gateway/channels"
)

var _ channels.AdminChecker = (*Adapter)(nil)

// IsAdmin implements channels.AdminChecker with getChatMember: the chat's
// creator and its administrators administer it. A message the group sent
// as itself (an anonymous administrator) counts without a request; one
// sent on behalf of another chat (a linked channel) does not. Answers are
// cached per chat and user for channels.AdminTTL.
func (a *Adapter) IsAdmin(ctx context.Context, in channels.Inbound) (bool, error) {
	if in.ChatType == channels.Direct || in.SenderID == "" {
		return false, nil
	}
	chat, err := strconv.ParseInt(in.ChatID, 10, 64)
	if err != nil {
		return false, fmt.Errorf("telegram: getChatMember: chat id %q is not a number", in.ChatID)
	}
	user, err := strconv.ParseInt(in.SenderID, 10, 64)
	if err != nil {
		return false, fmt.Errorf("telegram: getChatMember: sender id %q is not a number", in.SenderID)
	}
	live := a.liveChatID(chat)
	switch {
	case user == chat || user == live:
		return true, nil // sender_chat is the group itself: only its administrators can post so
	case user < 0:
		return false, nil // a channel or another chat, never a member
	}
	room := strconv.FormatInt(live, 10)
	if admin, ok := a.admins.Get(room, in.SenderID); ok {
		return admin, nil
	}
	resp, err := a.sendRetryingResp(ctx, "getChatMember", tgbotapi.Params{"chat_id": room, "user_id": in.SenderID})
	if err != nil {
		return false, err
	}
	var m tgbotapi.ChatMember
	if err := json.Unmarshal(resp.Result, &m); err != nil {
		return false, fmt.Errorf("telegram: getChatMember: decode: %w", err)
	}
	admin := m.IsCreator() || m.IsAdministrator()
	a.admins.Put(room, in.SenderID, admin)
	return admin, nil
}
