package access

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
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
// it was given.
type Request struct {
	Channel    string    `json:"channel"`
	AccountID  string    `json:"accountId"`
	Code       string    `json:"code"`
	SenderID   string    `json:"senderId"`
	SenderName string    `json:"senderName,omitempty"`
	ChatID     string    `json:"chatId,omitempty"`
	CreatedAt  time.Time `json:"createdAt"`
	ExpiresAt  time.Time `json:"expiresAt"`
}

// Approval is a sender admitted by an operator.
type Approval struct {
	Channel    string    `json:"channel"`
	AccountID  string    `json:"accountId"`
	SenderID   string    `json:"senderId"`
	SenderName string    `json:"senderName,omitempty"`
	Code       string    `json:"code,omitempty"`
	ApprovedAt time.Time `json:"approvedAt"`
}

// StoreOptions configures a PairingStore.
type StoreOptions struct {
	Logger *zap.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Rand is the code entropy source (crypto/rand when nil).
	Rand io.Reader
	// LockTimeout bounds waiting for another process's file lock (10 s
	// when zero).
	LockTimeout time.Duration
}

// PairingStore keeps pending pairing requests and approved senders, one
// JSON file per channel under its directory. It is safe for concurrent use
// by goroutines and by processes.
type PairingStore struct {
	dir  string
	opts StoreOptions
	log  *zap.Logger

	mu    sync.Mutex            // guards files; held across file I/O of this store only
	files map[string]*fileState // by channel
}

var channelName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// OpenPairingStore opens (creating with 0700) the pairing directory dir,
// normally <stateDir>/pairing.
func OpenPairingStore(dir string, opts StoreOptions) (*PairingStore, error) {
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
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("access: open pairing store: %w", err)
	}
	return &PairingStore{dir: dir, opts: opts, log: opts.Logger, files: map[string]*fileState{}}, nil
}

// Dir is the store's directory.
func (s *PairingStore) Dir() string { return s.dir }

func checkChannel(channel string) error {
	if !channelName.MatchString(channel) {
		return fmt.Errorf("access: %q is not a channel name", channel)
	}
	return nil
}

// IsApproved reports whether sender was admitted on channel/account.
func (s *PairingStore) IsApproved(channel, accountID, sender string, caseSensitive bool) (bool, error) {
	if err := checkChannel(channel); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.loadLocked(channel)
	if err != nil {
		return false, err
	}
	for _, a := range f.data.Allowed {
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
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	// Fast path without the file lock: an existing live code.
	f, err := s.loadLocked(channel)
	if err != nil {
		return Request{}, false, err
	}
	if r, ok := findPending(f.data.Pending, accountID, sender, caseSensitive, now); ok {
		return r, false, nil
	}
	err = s.updateLocked(channel, func(d *pairingFile) (bool, error) {
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

func (s *PairingStore) newCode(d *pairingFile) (string, error) {
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
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	var out []Request
	for _, ch := range chans {
		f, err := s.loadLocked(ch)
		if err != nil {
			return nil, err
		}
		for _, r := range f.data.Pending {
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
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Approval
	for _, ch := range chans {
		f, err := s.loadLocked(ch)
		if err != nil {
			return nil, err
		}
		out = append(out, f.data.Allowed...)
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
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("access: list pairing files: %w", err)
	}
	var out []string
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if ok && e.Type().IsRegular() && channelName.MatchString(name) {
			out = append(out, name)
		}
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
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	var out Approval
	var refuse error
	err := s.updateLocked(channel, func(d *pairingFile) (bool, error) {
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
	s.mu.Lock()
	defer s.mu.Unlock()
	removed := false
	err := s.updateLocked(channel, func(d *pairingFile) (bool, error) {
		n := len(d.Allowed)
		d.Allowed = slices.DeleteFunc(d.Allowed, func(a Approval) bool {
			return a.AccountID == accountID && a.SenderID == sender
		})
		removed = len(d.Allowed) != n
		return removed, nil
	})
	return removed, err
}

func (s *PairingStore) path(channel string) string {
	return filepath.Join(s.dir, channel+".json")
}
