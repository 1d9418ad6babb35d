// Package discord is the Discord channel adapter (SPEC §6), built on
// github.com/bwmarrin/discordgo.
//
// Run opens a gateway session with the intents the bot needs (guilds, guild
// messages, direct messages, message content) and turns MESSAGE_CREATE into
// channels.Inbound: DMs (ChatType direct, the peer is the author), guild
// channels (ChatType channel, ChatID the channel, GuildID) and threads
// (ChatID and ParentChatID the parent channel, ThreadID the thread, so that
// routing gives the parent's key plus ":thread:<id>"). The bot's own
// messages, other bots, webhooks and system messages are ignored. In
// guilds a message needs a mention of the bot user or one of its roles, or
// a reply to one of its messages (requireMention, default true); the mention
// is stripped from the text.
//
// The adapter owns reconnection: discordgo's own reconnect loop is turned
// off (it cannot be stopped), and Run reopens the session after every
// disconnect, which resumes it (op 6) so no event is lost; Run returns when
// its context ends, after closing the session. Events are handled one at a
// time in gateway order on Run's goroutine; the discordgo read loop never
// blocks on the handler.
//
// Send posts Markdown as is (Discord renders it), split at 2000 characters
// without breaking code blocks, the first part as a reply to
// Outbound.ReplyToID, to the thread when Outbound.ThreadID is set. 429
// answers are retried by discordgo. Send, Notify and Typing use REST only
// and are safe for concurrent use, also while Run is not running.
package discord
