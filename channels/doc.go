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
// channels and its sub-packages never import sessions, agents or lanes, and
// adapters never import each other.
package channels
