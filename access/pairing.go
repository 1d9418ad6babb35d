package access

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/gateway/gateway/internal/pairstate"
)

// Pairing limits (SPEC §6).
const (
	// CodeLength is the length of a pairing code.
	CodeLength = 8
	// CodeAlphabet has no 0/O, 1/I/L: codes are read aloud and retyped.
	CodeAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
	// CodeTTL is how long a pairing code stays valid.
	CodeTTL = time.Hour
	// MaxPending is the most pending codes per channel account.
	MaxPending = 3
)

// Pairing errors callers branch on.
var (
	// ErrCodeNotFound: no pending request has that code.
	ErrCodeNotFound = errors.New("pairing code not found")
	// ErrCodeExpired: the code existed but is older than CodeTTL.
	ErrCodeExpired = errors.New("pairing code expired")
	// ErrPairingFull: the account already has MaxPending pending codes.
	ErrPairingFull = errors.New("too many pending pairing requests")
)

// Request is a pending pairing request: an unknown DM sender and the code
// it was given. It is the pairing contract's pairstate.Request, which the
// storage seam's sessions.PairingState stores.
type Request = pairstate.Request

// Approval is a sender admitted by an operator.
type Approval = pairstate.Approval

// StoreOptions configures a PairingStore.
type StoreOptions struct {
	Logger *zap.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Rand is the code entropy source (crypto/rand when nil).
	Rand io.Reader
	// LockTimeout bounds each call to the pairing state, waiting for
	// another process's lock included (10 s when zero).
	LockTimeout time.Duration
}

// PairingStore keeps the pairing rules (codes, expiry, caps, case
// sensitivity) over a pairing state, which stores each channel's pending
// requests and approved senders (files under <stateDir>/pairing, or
// PostgreSQL). The state is the storage seam's sessions.PairingState,
// declared in internal/pairstate so that access does not reach sessions. It is safe for concurrent use by goroutines and by
// processes: every change is one UpdatePairing, serialised by the state.
type PairingStore struct {
	state pairstate.State
	opts  StoreOptions
	log   *zap.Logger
}

// NewPairingStore returns the store keeping its data in state (normally
// the storage backend's: sessions.Backend.Pairing).
func NewPairingStore(state pairstate.State, opts StoreOptions) *PairingStore {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Rand == nil {
		opts.Rand = rand.Reader
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = 10 * time.Second
	}
	return &PairingStore{state: state, opts: opts, log: opts.Logger}
}

// OpenPairingStore opens (creating with 0700) the pairing directory dir,
// normally <stateDir>/pairing, as a files pairing state (pairstate.Files,
// the files backend's filestore.Pairing): the convenience of tests and
// tools that have a directory, not a backend.
func OpenPairingStore(dir string, opts StoreOptions) (*PairingStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("access: open pairing store: %w", err)
	}
	return NewPairingStore(pairstate.NewFiles(dir, opts.LockTimeout), opts), nil
}

// ctx bounds one call to the state.
func (s *PairingStore) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.opts.LockTimeout)
}

func checkChannel(channel string) error {
	if err := pairstate.CheckChannel(channel); err != nil {
		return fmt.Errorf("access: %w", err)
	}
	return nil
}

// load returns channel's stored data.
func (s *PairingStore) load(channel string) (pairstate.Data, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	return s.state.LoadPairing(ctx, channel)
}

// update runs fn on channel's data through the state (serialised across
// processes), storing the result when fn reports a change.
func (s *PairingStore) update(channel string, fn func(*pairstate.Data) (bool, error)) error {
	ctx, cancel := s.ctx()
	defer cancel()
	return s.state.UpdatePairing(ctx, channel, fn)
}

// IsApproved reports whether sender was admitted on channel/account.
func (s *PairingStore) IsApproved(channel, accountID, sender string, caseSensitive bool) (bool, error) {
	if err := checkChannel(channel); err != nil {
		return false, err
	}
	d, err := s.load(channel)
	if err != nil {
		return false, err
	}
	for _, a := range d.Allowed {
		if a.AccountID == accountID && sameSender(a.SenderID, sender, caseSensitive) {
			return true, nil
		}
	}
	return false, nil
}

// Request returns the pending code of the sender of in, creating one if it
// has none. created is true for a new code. It fails with ErrPairingFull
// when the account already has MaxPending live codes.
func (s *PairingStore) Request(channel, accountID, sender, senderName, chatID string, caseSensitive bool) (req Request, created bool, err error) {
	if err := checkChannel(channel); err != nil {
		return Request{}, false, err
	}
	now := s.opts.Now()
	senderName = cleanName(senderName)
	// Fast path without serialising: an existing live code.
	d, err := s.load(channel)
	if err != nil {
		return Request{}, false, err
	}
	if r, ok := findPending(d.Pending, accountID, sender, caseSensitive, now); ok {
		return r, false, nil
	}
	err = s.update(channel, func(d *pairstate.Data) (bool, error) {
		if r, ok := findPending(d.Pending, accountID, sender, caseSensitive, now); ok {
			req = r
			return false, nil
		}
		d.Pending = slices.DeleteFunc(d.Pending, func(r Request) bool { return !now.Before(r.ExpiresAt) })
		n := 0
		for _, r := range d.Pending {
			if r.AccountID == accountID {
				n++
			}
		}
		if n >= MaxPending {
			return false, ErrPairingFull
		}
		code, err := s.newCode(d)
		if err != nil {
			return false, err
		}
		req = Request{Channel: channel, AccountID: accountID, Code: code, SenderID: sender,
			SenderName: senderName, ChatID: chatID, CreatedAt: now, ExpiresAt: now.Add(CodeTTL)}
		d.Pending = append(d.Pending, req)
		created = true
		return true, nil
	})
	if err != nil {
		return Request{}, false, err
	}
	if created {
		s.log.Info("pairing code issued", zap.String("channel", channel), zap.String("account_id", accountID),
			zap.String("sender_id", sender))
	}
	return req, created, nil
}

func findPending(list []Request, accountID, sender string, caseSensitive bool, now time.Time) (Request, bool) {
	for _, r := range list {
		if r.AccountID == accountID && sameSender(r.SenderID, sender, caseSensitive) && now.Before(r.ExpiresAt) {
			return r, true
		}
	}
	return Request{}, false
}

func (s *PairingStore) newCode(d *pairstate.Data) (string, error) {
	var buf [CodeLength]byte
	for range 16 {
		if _, err := io.ReadFull(s.opts.Rand, buf[:]); err != nil {
			return "", fmt.Errorf("access: pairing code: %w", err)
		}
		for i, b := range buf {
			// 256 % 31 != 0: the bias (at most 1/256) does not matter for
			// a one-hour, operator-approved code.
			buf[i] = CodeAlphabet[int(b)%len(CodeAlphabet)]
		}
		code := string(buf[:])
		if !slices.ContainsFunc(d.Pending, func(r Request) bool { return r.Code == code }) {
			return code, nil
		}
	}
	return "", errors.New("access: pairing code: no unique code")
}

// List returns the live pending requests of channel ("" for every
// channel), oldest first.
func (s *PairingStore) List(channel string) ([]Request, error) {
	chans, err := s.channels(channel)
	if err != nil {
		return nil, err
	}
	now := s.opts.Now()
	var out []Request
	for _, ch := range chans {
		d, err := s.load(ch)
		if err != nil {
			return nil, err
		}
		for _, r := range d.Pending {
			if now.Before(r.ExpiresAt) {
				out = append(out, r)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, nil
}

// Approved returns the approved senders of channel ("" for every channel).
func (s *PairingStore) Approved(channel string) ([]Approval, error) {
	chans, err := s.channels(channel)
	if err != nil {
		return nil, err
	}
	var out []Approval
	for _, ch := range chans {
		d, err := s.load(ch)
		if err != nil {
			return nil, err
		}
		out = append(out, d.Allowed...)
	}
	return out, nil
}

func (s *PairingStore) channels(channel string) ([]string, error) {
	if channel != "" {
		if err := checkChannel(channel); err != nil {
			return nil, err
		}
		return []string{channel}, nil
	}
	ctx, cancel := s.ctx()
	defer cancel()
	out, err := s.state.PairingChannels(ctx)
	if err != nil {
		return nil, fmt.Errorf("access: list pairing channels: %w", err)
	}
	return out, nil
}

// Approve admits the sender that was given code on channel (case does not
// matter). It returns ErrCodeNotFound or ErrCodeExpired (wrapped) when the
// code cannot be used; an expired code is removed.
func (s *PairingStore) Approve(channel, code string) (Approval, error) {
	if err := checkChannel(channel); err != nil {
		return Approval{}, err
	}
	code = strings.ToUpper(strings.TrimSpace(code))
	now := s.opts.Now()
	var out Approval
	var refuse error
	err := s.update(channel, func(d *pairstate.Data) (bool, error) {
		i := slices.IndexFunc(d.Pending, func(r Request) bool { return r.Code == code })
		if i < 0 {
			return false, fmt.Errorf("access: approve %s %s: %w", channel, code, ErrCodeNotFound)
		}
		r := d.Pending[i]
		d.Pending = slices.Delete(d.Pending, i, i+1)
		if !now.Before(r.ExpiresAt) {
			refuse = fmt.Errorf("access: approve %s %s: %w", channel, code, ErrCodeExpired)
			return true, nil
		}
		out = Approval{Channel: channel, AccountID: r.AccountID, SenderID: r.SenderID,
			SenderName: r.SenderName, Code: r.Code, ApprovedAt: now}
		d.Allowed = slices.DeleteFunc(d.Allowed, func(a Approval) bool {
			return a.AccountID == r.AccountID && a.SenderID == r.SenderID
		})
		d.Allowed = append(d.Allowed, out)
		return true, nil
	})
	if err != nil {
		return Approval{}, err
	}
	if refuse != nil {
		return Approval{}, refuse
	}
	s.log.Info("pairing approved", zap.String("channel", channel), zap.String("account_id", out.AccountID),
		zap.String("sender_id", out.SenderID))
	return out, nil
}

// Revoke removes an approved sender; it reports whether one was removed.
func (s *PairingStore) Revoke(channel, accountID, sender string) (bool, error) {
	if err := checkChannel(channel); err != nil {
		return false, err
	}
	removed := false
	err := s.update(channel, func(d *pairstate.Data) (bool, error) {
		n := len(d.Allowed)
		d.Allowed = slices.DeleteFunc(d.Allowed, func(a Approval) bool {
			return a.AccountID == accountID && a.SenderID == sender
		})
		removed = len(d.Allowed) != n
		return removed, nil
	})
	return removed, err
}

// maxNameBytes caps a sender's display name as stored with a request.
const maxNameBytes = 256

// cleanName makes a display name from a chat storable: valid UTF-8, no
// control characters, at most maxNameBytes. It is shown to the operator
// only; the sender id is what admits.
func cleanName(name string) string {
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(name, "\uFFFD"))
	for len(name) > maxNameBytes {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	return name
}
