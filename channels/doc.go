// Package channels defines the normalised message types and the adapter
// contract shared by every chat channel (SPEC §6).
//
// An Adapter turns a platform's updates into Inbound values and hands each to
// a Handler; it acknowledges the platform (advances the Telegram offset, for
// example) only after the Handler returned nil, which means the message was
// durably accepted. Replies travel back as Outbound values through Send.
// Optional capabilities (typing indicator, editing, whether a sender
// administers a room: AdminChecker) are small interfaces found by type
// assertion.
//
// Commands is the chat command catalogue: the dispatcher recognises and
// documents (/help) the same commands that adapters publish as native menus
// or slash commands; an Inbound that came through a platform interaction
// carries it in Interaction, and so does its reply's Outbound.
//
// Inbound and Outbound embed an Address: where a message came from, which
// is where its reply goes. Its AccountKey names the bot account (the key
// the dispatcher finds an adapter by) and its ChatKey the chat; both are
// the one spelling of those joins.
//
// channels and its sub-packages never import sessions, agents or lanes,
// adapters never import each other, and none imports access: the daemon
// hands an adapter the answers of the access policy in force that it needs
// (mention gating, where to register commands, room settings) as functions
// in its Options.
package channels
