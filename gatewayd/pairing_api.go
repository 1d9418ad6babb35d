package gatewayd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/api"
	"github.com/gateway/gateway/channels"
)

// pairingAPI is api.Pairing over the daemon's pairing store: an approval
// made in the console is told to the sender in the chat their request came
// from, through that account's adapter (a notice, not a turn: nothing is
// journalled; a failed notice is reported to the operator and the approval
// stands).
type pairingAPI struct{ d *Daemon }

var _ api.Pairing = pairingAPI{}

// approvedNotice is what an approved sender is told.
const approvedNotice = "You're approved: an operator accepted your pairing code. Write again and the bot will answer."

// notifyTimeout bounds the notice's send.
const notifyTimeout = 15 * time.Second

func (p pairingAPI) List() ([]access.Request, []access.Approval, error) {
	pending, err := p.d.pairing.List("")
	if err != nil {
		return nil, nil, err
	}
	approved, err := p.d.pairing.Approved("")
	return pending, approved, err
}

// pairingChannel spells a channel of a console request as the pairing
// state names it (lower case, as `gateway pairing` does); a name no
// channel pairs under is the caller's mistake (api.ErrBadRequest), not an
// empty answer, nor pairing state left for the typo.
func pairingChannel(arg string) (string, error) {
	ch := strings.ToLower(strings.TrimSpace(arg))
	names := PairingChannels()
	if !slices.Contains(names, ch) {
		return "", fmt.Errorf("%w: channel %q: want one of %s", api.ErrBadRequest, arg, strings.Join(names, ", "))
	}
	return ch, nil
}

func (p pairingAPI) Approve(ctx context.Context, channel, code string) (access.Approval, error, error) {
	channel, err := pairingChannel(channel)
	if err != nil {
		return access.Approval{}, nil, err
	}
	pending, err := p.d.pairing.List(channel)
	if err != nil {
		return access.Approval{}, nil, err
	}
	var chat string
	for _, r := range pending {
		if strings.EqualFold(r.Code, strings.TrimSpace(code)) {
			chat = r.ChatID
		}
	}
	a, err := p.d.pairing.Approve(channel, code)
	if err != nil {
		return access.Approval{}, nil, err
	}
	return a, p.notify(ctx, a, chat), nil
}

// Revoke withdraws an approval; the dispatcher then asks again every
// message it accepted before (the revoked sender's may be queued behind a
// turn), as after a reload.
func (p pairingAPI) Revoke(channel, accountID, senderID string) (bool, error) {
	channel, err := pairingChannel(channel)
	if err != nil {
		return false, err
	}
	ok, err := p.d.pairing.Revoke(channel, accountID, senderID)
	if ok {
		p.d.disp.AccessChanged()
	}
	return ok, err
}

// notify sends approvedNotice to chat through a's account.
func (p pairingAPI) notify(ctx context.Context, a access.Approval, chat string) error {
	if chat == "" {
		return errors.New("the request recorded no chat to answer in")
	}
	for _, ad := range p.d.adapters {
		if ad.Name() != a.Channel || ad.AccountID() != a.AccountID {
			continue
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), notifyTimeout)
		defer cancel()
		out := channels.Outbound{Address: channels.Address{Channel: a.Channel, AccountID: a.AccountID, ChatID: chat}, Text: approvedNotice}
		if err := ad.Send(ctx, out); err != nil {
			return fmt.Errorf("notify approved sender: %w", err)
		}
		return nil
	}
	return fmt.Errorf("no running %s account %s to tell the sender", a.Channel, a.AccountID)
}
