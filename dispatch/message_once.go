package dispatch

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
)

// Posts of the message tool once (exactly once where the platform allows
// it): a reply or a question the tool posts carries a delivery id derived
// from the turn (its journal records), the action, the message it answers
// and its text, so that the same post made again by the same turn is the
// same delivery. On Discord the adapter turns it into an enforced nonce
// (channels/discord/nonce.go): the second post creates nothing and returns
// the first message. That covers a model that repeats a post whose answer
// was lost (a timeout after Discord created it) and a turn run again after
// a crash inside the tool, whose model posts the same text again: the
// records are the same, so is the id. Platforms without an idempotency key
// (Telegram) ignore it. A turn that means to post one text twice to the
// same message gets one post; a turn without records (internal work)
// gets no id and posts as before. An ambient tick has its record, so its
// posts are once too.

// turnOnce is the identity of the turn of ws for postOnceID: its records'
// ids, sorted; "" when it has none.
func turnOnce(ws []*work) string {
	var ids []string
	for _, w := range ws {
		if w != nil && w.RecordID != "" {
			ids = append(ids, w.RecordID)
		}
	}
	slices.Sort(ids)
	return strings.Join(ids, ",")
}

// postOnceID is the delivery id of the tool's post (action, answering
// replyTo, text) in the turn once ("" without one).
func postOnceID(once, action, replyTo, text string) string {
	if once == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(once + "\x00" + action + "\x00" + replyTo + "\x00" + text))
	return "tool-" + hex.EncodeToString(sum[:16])
}
