package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents/llm"
)

// Room is the chat room a turn answers (channel, account, chat and thread
// or topic), as the message tool reaches it. The dispatcher binds one to
// each turn it runs for a chat (agents cannot import channels): every call
// acts in that room and nowhere else, whatever the model asks. An empty
// message id means the default target: the message the turn answers
// (React, Reply) or the bot's newest message in the room (Edit, Delete).
//
// Errors wrapping ErrUnknownMessage, ErrNotOwnMessage, ErrUnsupported or
// ErrRefused carry a message fit for the model (no platform error text,
// no token); any other error is reported to the model as an internal
// failure and logged.
type Room interface {
	// React puts the bot's reaction emoji on a message the gateway has
	// seen in the room.
	React(ctx context.Context, messageID, emoji string) error
	// Reply posts text as an answer to a message the gateway has seen in
	// the room and returns the ids of the messages posted (a long text
	// becomes several).
	Reply(ctx context.Context, messageID, text string) ([]string, error)
	// Edit replaces the text of one of the bot's own messages in the room
	// (cut to one platform message) and returns its id.
	Edit(ctx context.Context, messageID, text string) (string, error)
	// Delete removes one of the bot's own messages in the room and returns
	// its id.
	Delete(ctx context.Context, messageID string) (string, error)
	// Ask posts text with a button per choice and returns the message's
	// id. A press comes back as a message of the chat whose text is the
	// chosen label, from whoever pressed (once per question).
	Ask(ctx context.Context, text string, choices []string) (string, error)
}

// Errors a Room returns for a call it refuses; their text is shown to the
// model.
var (
	ErrUnknownMessage = errors.New("unknown message")
	ErrNotOwnMessage  = errors.New("not the bot's message")
	ErrUnsupported    = errors.New("not supported here")
	ErrRefused        = errors.New("refused")
)

// messageArgs are the message tool's arguments. Anything else (a chat id,
// a channel) is refused: the tool acts only in the turn's room.
type messageArgs struct {
	Action    string `json:"action"`
	MessageID string `json:"messageId"`
	Emoji     string `json:"emoji"`
	Text      string `json:"text"`
	// Choices are ask's button labels.
	Choices []string `json:"choices"`
	// send_media: workspace paths or media ids, and a caption.
	Files   []string `json:"files"`
	Caption string   `json:"caption"`
}

// maxMessageToolText bounds a reply or edit (characters); the platform
// splits or refuses past its own limit.
const maxMessageToolText = 20000

// maxAskText bounds ask's question: one platform message (Discord's 2000).
const maxAskText = 2000

// messageTool offers the turn's Room to the model: react, reply, edit,
// delete. Off unless tools.allow names it (toolpolicy.go).
func (r *Runner) messageTool(room Room) tool {
	return tool{
		def: llm.Tool{
			Name: MessageToolName,
			Description: "Act on messages of the current chat only: react to a message with an emoji, reply to a specific message, " +
				"edit or delete one of your own earlier messages, ask a question with buttons (ask: text and 1-10 choices; " +
				"the first press comes back to you as a message from the member who pressed, its text the chosen label), " +
				"or send files with your reply (send_media). Message ids appear as [message_id: …] before the messages; " +
				"without messageId, react and reply target the message you are answering, edit and delete your newest message here. " +
				"send_media attaches files to your reply (sent after its text): paths relative to your workspace, or media ids (media:…) a tool result gave; " +
				"several images go out as one album with the caption.",
			Parameters: json.RawMessage(`{"type":"object","properties":{` +
				`"action":{"type":"string","enum":["react","reply","edit","delete","ask","send_media"]},` +
				`"messageId":{"type":"string","description":"the platform message id (see above)"},` +
				`"emoji":{"type":"string","description":"react: one emoji, e.g. 👍"},` +
				`"text":{"type":"string","description":"reply, edit and ask: the text (Markdown)"},` +
				`"choices":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":10,"description":"ask: the button labels (short, distinct, at most 40 characters)"},` +
				`"files":{"type":"array","items":{"type":"string"},"description":"send_media: workspace paths or media ids, at most 20 (albums of 10)"},` +
				`"caption":{"type":"string","description":"send_media: the caption (Markdown)"}},` +
				`"required":["action"],"additionalProperties":false}`),
		},
		run: func(ctx context.Context, s *session, raw json.RawMessage) (any, error) {
			args, err := decodeMessageArgs(raw)
			if err != nil {
				return nil, err
			}
			if room == nil {
				return nil, toolErrorf("message: this turn has no chat room (a subagent, or a message the API sent); nothing to act on")
			}
			if args.Action == "send_media" {
				return r.sendMedia(s, args)
			}
			out, err := runMessage(ctx, room, args)
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				for _, known := range []error{ErrUnknownMessage, ErrNotOwnMessage, ErrUnsupported, ErrRefused} {
					if errors.Is(err, known) {
						s.log.Info("message tool refused", zap.String("action", args.Action), zap.Error(err))
						return nil, toolErrorf("message: %s", err.Error())
					}
				}
				return nil, fmt.Errorf("agents: message tool: %s: %w", args.Action, err)
			}
			return out, nil
		},
	}
}

// decodeMessageArgs decodes strictly: an argument the tool does not have
// (chatId, channel, …) is an error naming it.
func decodeMessageArgs(raw json.RawMessage) (messageArgs, error) {
	var args messageArgs
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage(`{}`)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&args); err != nil {
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return args, toolErrorf("message: unknown argument %s: the tool acts only in the current chat and takes action, messageId, emoji, text, choices, files and caption", f)
		}
		return args, toolErrorf("invalid arguments: %v", err)
	}
	args.Action = strings.ToLower(strings.TrimSpace(args.Action))
	args.MessageID = strings.TrimSpace(args.MessageID)
	args.Emoji = strings.TrimSpace(args.Emoji)
	switch args.Action {
	case "react":
		if args.Emoji == "" || utf8.RuneCountInString(args.Emoji) > 16 {
			return args, toolErrorf("message: react needs emoji: one emoji, e.g. 👍")
		}
	case "reply", "edit":
		if strings.TrimSpace(args.Text) == "" {
			return args, toolErrorf("message: %s needs text", args.Action)
		}
		if utf8.RuneCountInString(args.Text) > maxMessageToolText {
			return args, toolErrorf("message: text longer than %d characters", maxMessageToolText)
		}
	case "delete":
	case "ask":
		if strings.TrimSpace(args.Text) == "" {
			return args, toolErrorf("message: ask needs text: the question")
		}
		if utf8.RuneCountInString(args.Text) > maxAskText {
			return args, toolErrorf("message: ask's text longer than %d characters", maxAskText)
		}
		if len(args.Choices) == 0 {
			return args, toolErrorf("message: ask needs choices: 1 to 10 button labels")
		}
		for i, c := range args.Choices {
			args.Choices[i] = strings.TrimSpace(c)
		}
	case "send_media":
		if len(args.Files) == 0 || len(args.Files) > maxMediaPerSend {
			return args, toolErrorf("message: send_media needs files: 1 to %d workspace paths or media ids", maxMediaPerSend)
		}
		if utf8.RuneCountInString(args.Caption) > maxCaption {
			return args, toolErrorf("message: caption longer than %d characters", maxCaption)
		}
	case "":
		return args, toolErrorf("message: action is required: react, reply, edit, delete, ask or send_media")
	default:
		return args, toolErrorf("message: unknown action %q: react, reply, edit, delete, ask or send_media", args.Action)
	}
	if args.Action != "ask" && len(args.Choices) > 0 {
		return args, toolErrorf("message: choices go with ask only")
	}
	return args, nil
}

// runMessage performs args in room; the result tells the model the ids.
func runMessage(ctx context.Context, room Room, args messageArgs) (any, error) {
	switch args.Action {
	case "react":
		if err := room.React(ctx, args.MessageID, args.Emoji); err != nil {
			return nil, err
		}
		return map[string]any{"ok": true, "action": "react", "emoji": args.Emoji}, nil
	case "reply":
		ids, err := room.Reply(ctx, args.MessageID, args.Text)
		if err != nil {
			return nil, err
		}
		return map[string]any{"ok": true, "action": "reply", "messageIds": ids}, nil
	case "edit":
		id, err := room.Edit(ctx, args.MessageID, args.Text)
		if err != nil {
			return nil, err
		}
		return map[string]any{"ok": true, "action": "edit", "messageId": id}, nil
	case "ask":
		id, err := room.Ask(ctx, args.Text, args.Choices)
		if err != nil {
			return nil, err
		}
		return map[string]any{"ok": true, "action": "ask", "messageId": id,
			"note": "The buttons are shown; the first press reaches you as a new message. Do not wait for it in this turn."}, nil
	default: // delete
		id, err := room.Delete(ctx, args.MessageID)
		if err != nil {
			return nil, err
		}
		return map[string]any{"ok": true, "action": "delete", "messageId": id}, nil
	}
}

// OffersMessageTool reports whether agentID's tool policy offers the
// message tool: the dispatcher then binds a Room to its turns, records the
// room's message ids and shows them to the model.
func (r *Runner) OffersMessageTool(agentID string) bool {
	a, ok := r.agents[agentID]
	return ok && a.Tools.offers(MessageToolName)
}
