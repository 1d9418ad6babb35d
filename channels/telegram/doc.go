// Package telegram is the Telegram Bot API channel adapter (SPEC §6).
//
// An Adapter serves one bot account. It receives updates by long polling
// (its own getUpdates loop: context-aware, exponential backoff, 409 and 429
// handling) or through a webhook (WebhookHandler, secret token checked on
// every request), turns each message into a channels.Inbound and hands it to
// the Handler. The polling offset advances, and is persisted through an
// OffsetStore, only after the Handler returned nil or channels.ErrRejected;
// a webhook request is answered 200 only then. An update whose Handler call
// failed is retried later and never skipped.
//
// Normalisation: private chats are direct chats whose peer is the sender;
// a message sent on behalf of a chat (sender_chat: an anonymous
// administrator's, which is the group itself, or a channel's) comes from
// that chat, not from the placeholder user Telegram puts in "from";
// groups and supergroups are groups; a forum message belongs to the topic
// in message_thread_id, or to topic 1 (General) when it has none. In groups
// where a mention is required (Options.MentionRequired, the daemon's answer
// from the access rules: requireMention, default true, refined per group
// and topic; the adapter does not import access) a message reaches the
// Handler only if
// it mentions the bot (@name or a text mention), replies to one of the bot's
// messages (a topic's root message does not count) or is a bot command for
// this bot, or follows such a message as the next fragment of a paste the
// client split (paste.go) or another file of its album (album.go: files
// seen before the one that addresses the album, in an earlier batch or
// webhook request, are held and handed over before it); other messages
// are acknowledged and dropped here. The mention is
// stripped from the text and "/cmd@botname" becomes "/cmd"; commands for
// another bot are ignored. Files become attachments with the caption as
// text (media.go); stickers, locations, polls and the like become
// placeholders ("[sticker 😀]"). An edited message comes as an edit event
// (events.go), which the dispatcher drops unless the room hears edits.
// Channel posts are ignored, and so are the copies of
// a channel's posts that Telegram forwards into its linked discussion group
// (is_automatic_forward) unless automaticForwards is set. When a group is migrated to
// a supergroup (the service messages migrate_to_chat_id in the old chat and
// migrate_from_chat_id in the new one) the adapter records old id → new id
// (persisted by stores that implement MigrationStore) and hands the Handler
// a channels.EventMoved for the old chat, so the dispatcher moves the
// group's session to the supergroup's key; the event comes for each service
// message and again for every known migration at each start (moving is
// idempotent). Messages of the supergroup carry its own id; a late message
// of the old group is reported under the new id (its message id prefixed
// "m"), and Send to the old id goes to the new one. The supergroup numbers
// its messages afresh, so no message of the old group is quoted, edited or
// reacted to there.
//
// Sending converts Markdown to Telegram HTML (retrying as plain text when
// Telegram rejects the entities or finds no visible text in them), splits
// at 4096 UTF-16 units without breaking code blocks, replies into the same
// chat and topic (General is never addressed with message_thread_id 1) and
// honours 429 retry_after.
//
// At start Run publishes the command catalogue (Options.Commands) as the
// bot's command menu with setMyCommands: every command in private chats,
// the catalogue's group commands in groups; a failure is logged, not
// retried.
//
// IsAdmin (channels.AdminChecker) asks getChatMember whether a group
// message's sender is the chat's creator or an administrator, caching the
// answer for a minute per chat and user; a message the group sent as
// itself (an anonymous administrator) counts without asking.
//
// Concurrency: Run is called once; Send, Typing, Notify and IsAdmin may be
// called concurrently with Run and with each other, also before Run has
// started. Every request carries the caller's context.
package telegram
