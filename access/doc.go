// Package access decides whether an inbound chat message may reach an agent
// (SPEC §6): per channel account a DM policy (pairing, allowlist, open,
// disabled), an allowFrom list, a group policy (allowlist, open, disabled),
// per-group rules and mention gating.
//
// A Policy is built from typed Config values, one per channel account, and
// is immutable: hot reload builds a new Policy and swaps it. The daemon
// (gatewayd) owns the Policy in force; channel adapters do not import this
// package but get the answers they need of it (MentionRequired, whether a
// room admits anyone, Room) as functions. Policy.Check returns a Decision:
// Allow, Deny with a snake_case reason, or Pair with a one-time code to
// send back to an unknown DM sender.
//
// Pairing rules live in a PairingStore (codes, expiry, the cap of pending
// codes, case sensitivity); what it keeps is stored through the storage
// seam, a sessions.PairingState (declared in internal/pairstate, which
// access imports instead of sessions, so access reaches no storage
// layer). It is the backend's: one JSON file per channel under
// <stateDir>/pairing/ written under a flock, or PostgreSQL rows), so
// that the CLI's `gateway pairing approve` and the daemon never lose each
// other's updates. A Policy consults the store's approved senders on every
// message from a sender that is not in the static allowFrom list; the state
// shows changes made by another process on the next read.
//
// Decisions made here where the SPEC is silent:
//   - allowFrom entries are sender ids, optionally written "<channel>:<id>"
//     ("tg:<id>" for Telegram, "<@id>" for Discord); "*" admits anyone.
//     Approved pairings count as allowFrom entries of their channel
//     account. On Telegram and Discord ids are numbers: an entry that can
//     match no sender (a username) is an error of the config (CheckIDs).
//   - Group rules are looked up by thread id, chat id, parent chat id, guild
//     id and finally "*"; each field comes from the most specific rule that
//     sets it. A rule with allow:false blocks the group under any policy.
//   - Under groupPolicy allowlist a group is admitted only when a rule
//     matches it; the account's allowFrom does not open unlisted groups.
//     A rule's allowFrom, when set, limits who may talk in that group.
//   - Mention gating (requireMention, default true) applies to groups only;
//     adapters set Inbound.Mentioned and may pre-filter with
//     Policy.MentionRequired.
//   - Privileged commands (/new /reset /switch /delete): in DMs any admitted
//     sender; in groups, where the session is shared, only senders listed
//     in the group rule's allowFrom (including "*") or in commands.owners.
//     DM approval (the account's allowFrom, approved pairings) grants
//     nothing there. With commands.platformAdmins the group's
//     administrators on the platform may too: Policy.AskPlatform marks an
//     admitted, unprivileged group sender, and the dispatcher asks the
//     room's adapter (channels.AdminChecker: Telegram's chat creator and
//     administrators; on Discord the guild owner and members with
//     Administrator, Manage Server or Manage Channels in the channel) only
//     when such a sender runs a privileged command.
//
// access imports only the channels package of this project (and routing
// and the leaf package internal/pairstate).
package access
