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
// groups and supergroups are groups; a forum message belongs to the topic
// in message_thread_id, or to topic 1 (General) when it has none. In groups
// where a mention is required (Options.MentionRequired, the daemon's answer
// from the access rules: requireMention, default true, refined per group
// and topic; the adapter does not import access) a message reaches the
// Handler only if
// it mentions the bot (@name or a text mention), replies to one of the bot's
// messages (a topic's root message does not count) or is a bot command for
// this bot; other messages are acknowledged and dropped here. The mention is
// stripped from the text and "/cmd@botname" becomes "/cmd"; commands for
// another bot are ignored. Media become placeholders ("[photo] caption").
// Edited messages and channel posts are ignored, and so are the copies of
// a channel's posts that Telegram forwards into its linked discussion group
// (is_automatic_forward) unless automaticForwards is set. When a group is migrated to
// a supergroup the adapter records new id → old id (persisted by stores that
// implement MigrationStore) and keeps reporting the old chat id, so the
// group keeps its session; Send maps it back to the live id.
//
// Sending converts Markdown to Telegram HTML (retrying as plain text when
// Telegram rejects the entities), splits at 4096 UTF-16 units without
// breaking code blocks, replies into the same chat and topic (General is
// never addressed with message_thread_id 1) and honours 429 retry_after.
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
