package discord

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/bwmarrin/discordgo"

	"github.com/gateway/gateway/channels"
)

// Exactly-once posts (issue 22): Discord deduplicates message creation by
// nonce. With enforce_nonce, a post whose nonce the same author used in
// the past few minutes creates nothing and returns the message the first
// post created. Each chunk of a reply carries a nonce derived from the
// reply's outbox id and the chunk's index, so a resend (the answer to the
// first attempt was lost, the process died between Discord's acceptance
// and the sent mark, another replica took the reply over) posts nothing
// new. discordgo's MessageSend has no field for it: the request is made
// here, on the library's session (its rate-limit buckets, retries and
// headers). Posts outside the outbox (notices, drafts, questions without
// a delivery) carry a fresh nonce, so that discordgo's own repeat of a
// post answered 502 does not show it twice.

// maxNonceLen is Discord's limit on a nonce's length.
const maxNonceLen = 25

// nonceOf is the nonce of chunk i of the reply with outbox id delivery:
// the same for every attempt, different for every other (delivery, i).
func nonceOf(delivery string, i int) string {
	sum := sha256.Sum256([]byte(delivery + "/" + strconv.Itoa(i)))
	return hex.EncodeToString(sum[:])[:maxNonceLen]
}

// freshNonce is the nonce of a post outside the outbox (a notice, a
// draft): discordgo repeats a post answered 502 by itself, and the repeat
// must not show the message twice.
func freshNonce() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// postNonce is the nonce of chunk i of out: its delivery's when it has one.
func postNonce(out channels.Outbound, i int) string {
	if out.DeliveryID != "" {
		return nonceOf(out.DeliveryID, i)
	}
	return freshNonce()
}

// messageSendOnce is a message post with a nonce Discord enforces.
type messageSendOnce struct {
	*discordgo.MessageSend
	Nonce        string `json:"nonce"`
	EnforceNonce bool   `json:"enforce_nonce"`
}

// postOnce posts msg (text only: no files) to channel to with nonce
// enforced (opts: rest's); the message returned is the one the first post with that
// nonce created.
func (a *Adapter) postOnce(to string, msg *discordgo.MessageSend, nonce string, opts ...discordgo.RequestOption) (*discordgo.Message, error) {
	ep := discordgo.EndpointChannelMessages(to)
	body, err := a.s.RequestWithBucketID(http.MethodPost, ep, messageSendOnce{MessageSend: msg, Nonce: nonce, EnforceNonce: true},
		ep, opts...)
	if err != nil {
		return nil, err
	}
	var m discordgo.Message
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("decode the posted message: %w", err)
	}
	return &m, nil
}
