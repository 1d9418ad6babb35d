// Package discord is the Discord channel adapter (SPEC §6), built on
// github.com/bwmarrin/discordgo.
//
// Run opens a gateway session with the intents the bot needs (guilds, guild
// messages, direct messages, message content) and turns MESSAGE_CREATE into
// channels.Inbound: DMs (ChatType direct, the peer is the author), guild
// channels (ChatType channel, ChatID the channel, GuildID) and threads
// (ChatID and ParentChatID the parent channel, ThreadID the thread, so that
// routing gives the parent's key plus ":thread:<id>"; a channel the state
// does not know is looked up, and a message whose lookup Discord fails is
// held and read again, never judged as a channel of its own or a DM). The
// bot's own messages, other bots, webhooks and system messages are
// ignored. In
// guilds a message needs a mention of the bot user or one of its roles, or
// a reply to one of its messages, where the access rules require one
// (Options.MentionRequired: requireMention, default true); the mention is
// stripped from the text. The adapter does not import the access package:
// the daemon hands it these answers of the policy in force.
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
// Outbound.ReplyToID, to the thread when Outbound.ThreadID is set. A 429
// holds its route (a global one every route) for its retry_after: posts
// wait up to Options.MaxRetryAfter within their context, drafts and
// longer holds get a *RateLimitError (ratelimit.go). Send, Notify and Typing use REST only
// and are safe for concurrent use, also while Run is not running.
//
// Slash commands: at start the command catalogue (channels.Commands) is
// registered by bulk overwrite in each guild the account's access rules
// admit (Options.SlashAllowed; slashCommands: guild, the default), once
// globally (global) or not at all (off). When the rules change
// (ResyncSlash, a hot reload) a guild they newly admit gets the catalogue at once and a guild it no longer
// admits has the commands this Run registered there removed. An
// INTERACTION_CREATE for an application command becomes the
// Inbound of the typed command ("/history 5": the option values follow the
// name), addressed to the bot and subject to the access policy like a
// message, carrying a channels.Interaction. Interactions are served on
// their own goroutines, apart from messages and registrations and
// concurrently (up to 16 at once), one member's in one channel in order:
// one slow to be taken never eats another's 3 seconds. Once the
// Handler accepts the command the interaction is acknowledged with a
// deferred response, ephemeral (flag 64) for private commands (/status,
// /sessions, /history, /help), or after 2 seconds while the Handler still
// has it (withdrawn if it then refuses the command); the reply's first part then fills the
// original response and later parts are followups. A notice sent while the
// Handler runs (a refusal) is the interaction's ephemeral response; a
// command refused without a notice (a guild not admitted) gets no answer.
// After the token's 15 minutes, or when Discord refuses it, replies go to
// the channel as ordinary messages.
//
// IsAdmin (channels.AdminChecker) reports a member with Administrator,
// Manage Server or Manage Channels in the channel (a thread's parent), after
// its permission overwrites, or the guild's owner. A slash command carries
// the member's permissions; for a message they are computed from the
// gateway's state, falling back to REST (channel, guild, member: the bot
// does not ask for the privileged members intent). Answers are cached for
// a minute per channel and user.
package discord
