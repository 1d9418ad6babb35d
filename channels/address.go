package channels

import "strings"

// Address is where a message comes from or a reply goes: one chat (and
// thread or forum topic below it) of one bot account of one channel.
// Inbound and Outbound embed it, so their JSON (the ingress journal, the
// reply outbox) keeps these fields at the top level under the same names.
type Address struct {
	Channel   string // adapter name: "telegram", "discord", "web"
	AccountID string // bot account within the channel ("default")
	ChatID    string // where replies go: Telegram chat id, Discord channel id
	// ThreadID is a thread or forum-topic id below ChatID; IsTopic marks a
	// Telegram forum topic (routed as :topic:), else a thread (:thread:).
	ThreadID string
	IsTopic  bool
}

// AccountKey names one bot account of one channel. It is comparable (a map
// key); String spells it "channel/account".
type AccountKey struct {
	Channel   string
	AccountID string
}

// String returns "channel/account", e.g. "telegram/default".
func (k AccountKey) String() string { return k.Channel + "/" + k.AccountID }

// AccountOf is the key of adapter a's account.
func AccountOf(a Adapter) AccountKey {
	return AccountKey{Channel: a.Name(), AccountID: a.AccountID()}
}

// Account is the key of the account the address belongs to.
func (a Address) Account() AccountKey {
	return AccountKey{Channel: a.Channel, AccountID: a.AccountID}
}

// ChatKey names the chat, threads aside: "channel/account/chat". It is
// stored (draft and room-message record ids), so its spelling is fixed.
func (a Address) ChatKey() string {
	return a.Channel + "/" + a.AccountID + "/" + a.ChatID
}

// MessageRecordID is the journal's id of message id of chat a (the
// dispatcher's record id of an inbound message, before any event suffix):
// channel, account, chat and message joined by ':'. A web chat press takes
// its question's message id, so the history finds the press's record by it.
func MessageRecordID(a Address, id string) string {
	return strings.Join([]string{a.Channel, a.AccountID, a.ChatID, id}, ":")
}
