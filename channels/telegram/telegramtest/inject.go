package telegramtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
	"unicode"
	"unicode/utf16"
)

// Message describes an incoming message to inject. Zero fields take
// sensible values: ChatType "private" for a positive ChatID, else
// "supergroup"; FromID = ChatID in private chats.
type Message struct {
	ChatID   int64
	ChatType string // private, group, supergroup
	// Forum marks the chat as a forum; ThreadID is the topic (0 = General).
	// ThreadID without Forum in a private chat is a private-chat topic.
	Forum    bool
	ThreadID int
	// TopicCreatorID sends the topic's root message (default FromID); set
	// it to the bot's id to check that the root is not "a reply to the bot".
	TopicCreatorID int64
	FromID         int64
	FromName       string
	FromUserName   string
	// Text gets entities computed automatically: "@name" mentions and a
	// leading "/command[@bot]".
	Text    string
	Caption string
	// Media adds a media field: "photo", "voice", "video", "document",
	// "video_note", "animation", or "sticker" (with StickerEmoji).
	Media        string
	StickerEmoji string
	// ReplyTo makes the message a reply to an earlier message.
	ReplyTo *Reply
	// Edited delivers it as edited_message.
	Edited bool
	// Extra fields merged into the message object.
	Extra map[string]any
}

// Reply is the message replied to.
type Reply struct {
	MessageID int
	FromID    int64 // the bot's id for a reply to the bot
	IsBot     bool
	Text      string
}

// AddUpdate queues a raw update object (without update_id, which is
// assigned) and returns its update_id.
func (s *Server) AddUpdate(u map[string]any) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextUpdate
	s.nextUpdate++
	cp := make(map[string]any, len(u)+1)
	for k, v := range u {
		cp[k] = v
	}
	cp["update_id"] = id
	raw, err := json.Marshal(cp)
	if err != nil {
		panic(fmt.Sprintf("telegramtest: AddUpdate: %v", err))
	}
	s.updates = append(s.updates, pending{id: id, raw: raw})
	s.notifyLocked()
	return id
}

// Update returns the JSON of queued update id, if still pending.
func (s *Server) Update(id int) (json.RawMessage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range s.updates {
		if u.id == id {
			return u.raw, true
		}
	}
	return nil, false
}

// AddMessage queues m as an update and returns the update id and the
// message id it was given.
func (s *Server) AddMessage(m Message) (updateID, messageID int) {
	messageID = s.msgID()
	obj := s.MessageObject(m, messageID)
	key := "message"
	if m.Edited {
		key = "edited_message"
		obj["edit_date"] = time.Now().Unix()
	}
	return s.AddUpdate(map[string]any{key: obj}), messageID
}

// DM queues a private message from user fromID and returns its update id.
func (s *Server) DM(fromID int64, text string) int {
	id, _ := s.AddMessage(Message{ChatID: fromID, FromID: fromID, Text: text})
	return id
}

// Group queues a supergroup message and returns its update id.
func (s *Server) Group(chatID, fromID int64, text string) int {
	id, _ := s.AddMessage(Message{ChatID: chatID, FromID: fromID, Text: text})
	return id
}

// Topic queues a message in forum topic threadID (0 = General) and
// returns its update id.
func (s *Server) Topic(chatID int64, threadID int, fromID int64, text string) int {
	id, _ := s.AddMessage(Message{ChatID: chatID, Forum: true, ThreadID: threadID, FromID: fromID, Text: text})
	return id
}

// MessageObject builds the Bot API Message object for m.
func (s *Server) MessageObject(m Message, messageID int) map[string]any {
	if m.ChatType == "" {
		m.ChatType = "private"
		if m.ChatID < 0 {
			m.ChatType = "supergroup"
		}
	}
	if m.FromID == 0 {
		m.FromID = m.ChatID
	}
	if m.FromName == "" {
		m.FromName = fmt.Sprintf("User %d", m.FromID)
	}
	chat := map[string]any{"id": m.ChatID, "type": m.ChatType}
	if m.ChatType == "private" {
		chat["first_name"] = m.FromName
	} else {
		chat["title"] = fmt.Sprintf("Chat %d", m.ChatID)
	}
	if m.Forum {
		chat["is_forum"] = true
	}
	from := map[string]any{"id": m.FromID, "is_bot": false, "first_name": m.FromName}
	if m.FromUserName != "" {
		from["username"] = m.FromUserName
	}
	msg := map[string]any{"message_id": messageID, "date": time.Now().Unix(), "chat": chat, "from": from}
	if m.Text != "" {
		msg["text"] = m.Text
		if e := Entities(m.Text); len(e) > 0 {
			msg["entities"] = e
		}
	}
	if m.Caption != "" {
		msg["caption"] = m.Caption
		if e := Entities(m.Caption); len(e) > 0 {
			msg["caption_entities"] = e
		}
	}
	file := map[string]any{"file_id": "f1", "file_unique_id": "u1"}
	switch m.Media {
	case "":
	case "photo":
		msg["photo"] = []any{map[string]any{"file_id": "p1", "file_unique_id": "u1", "width": 90, "height": 90}}
	case "sticker":
		msg["sticker"] = map[string]any{"file_id": "s1", "file_unique_id": "u1", "width": 512, "height": 512,
			"is_animated": false, "emoji": m.StickerEmoji}
	case "voice":
		msg["voice"] = map[string]any{"file_id": "v1", "file_unique_id": "u1", "duration": 3}
	case "document":
		msg["document"] = map[string]any{"file_id": "d1", "file_unique_id": "u1", "file_name": "report.pdf"}
	default:
		msg[m.Media] = file
	}
	if m.Forum && m.ThreadID != 0 {
		msg["message_thread_id"] = m.ThreadID
		msg["is_topic_message"] = true
		creator := m.TopicCreatorID
		if creator == 0 {
			creator = m.FromID
		}
		// Telegram links every topic message to the topic's root message.
		msg["reply_to_message"] = map[string]any{
			"message_id": m.ThreadID, "date": time.Now().Unix(), "chat": chat,
			"from":                map[string]any{"id": creator, "is_bot": creator == s.opts.BotID, "first_name": "Creator"},
			"message_thread_id":   m.ThreadID,
			"forum_topic_created": map[string]any{"name": fmt.Sprintf("Topic %d", m.ThreadID), "icon_color": 7322096},
		}
	}
	if !m.Forum && m.ThreadID != 0 && m.ChatType == "private" {
		// A private chat with topics (Bot API 9.3): a thread id, no forum.
		msg["message_thread_id"] = m.ThreadID
		msg["is_topic_message"] = true
	}
	if r := m.ReplyTo; r != nil {
		rfrom := map[string]any{"id": r.FromID, "is_bot": r.IsBot || r.FromID == s.opts.BotID, "first_name": "Someone"}
		if r.FromID == s.opts.BotID {
			rfrom["username"] = s.opts.BotUserName
		}
		reply := map[string]any{"message_id": r.MessageID, "date": time.Now().Unix(), "chat": chat, "from": rfrom,
			"text": r.Text}
		if m.Forum && m.ThreadID != 0 {
			reply["message_thread_id"] = m.ThreadID
			reply["is_topic_message"] = true
		}
		if m.ThreadID == 0 && m.ChatType == "supergroup" {
			// Outside topics (a plain supergroup, a forum's General) a
			// supergroup threads replies: a reply carries the thread's
			// root message as message_thread_id, without is_topic_message.
			msg["message_thread_id"] = r.MessageID
		}
		msg["reply_to_message"] = reply
	}
	for k, v := range m.Extra {
		msg[k] = v
	}
	return msg
}

// Entities computes the mention and bot_command entities of text, with
// UTF-16 offsets, in offset order, as Telegram does: a command is a "/"
// at the start or after a space or newline ("@bot /new" holds one).
func Entities(text string) []map[string]any {
	units := utf16.Encode([]rune(text))
	var out []map[string]any
	isName := func(u uint16) bool {
		return u < 0x80 && (unicode.IsLetter(rune(u)) || unicode.IsDigit(rune(u)) || u == '_')
	}
	for i := 0; i < len(units); i++ {
		switch {
		case units[i] == '/' && (i == 0 || units[i-1] == ' ' || units[i-1] == '\n'):
			n := i + 1
			for n < len(units) && (isName(units[n]) || units[n] == '@') {
				n++
			}
			if n > i+1 {
				out = append(out, map[string]any{"type": "bot_command", "offset": i, "length": n - i})
			}
			i = n - 1
		case units[i] == '@' && (i == 0 || !(isName(units[i-1]) || units[i-1] == '@')):
			n := i + 1
			for n < len(units) && isName(units[n]) {
				n++
			}
			if n-i >= 4 { // usernames are at least 5 characters; allow short test names from 3
				out = append(out, map[string]any{"type": "mention", "offset": i, "length": n - i})
			}
			i = n - 1
		}
	}
	return out
}

// DeliverWebhook posts queued update id to target (empty: the registered
// webhook URL) with the registered secret token (or secret, if not empty)
// and returns the HTTP status. A 200 answer confirms the update, as
// Telegram does.
func (s *Server) DeliverWebhook(ctx context.Context, target string, id int, secret string) (int, error) {
	wh, ok := s.Webhook()
	if !ok {
		return 0, fmt.Errorf("telegramtest: no webhook set")
	}
	if target == "" {
		target = wh.URL
	}
	raw, ok := s.Update(id)
	if !ok {
		return 0, fmt.Errorf("telegramtest: update %d not pending", id)
	}
	if secret == "" {
		secret = wh.SecretToken
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(raw))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
	// No keep-alive: nothing lingers after the call (goleak-friendly).
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		s.confirm(id)
	}
	return resp.StatusCode, nil
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}
