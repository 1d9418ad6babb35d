package access

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/channels"
)

// clock is an injected, settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newStore(t *testing.T, clk *clock) *PairingStore {
	t.Helper()
	return openStore(t, filepath.Join(t.TempDir(), "pairing"), clk)
}

func openStore(t *testing.T, dir string, clk *clock) *PairingStore {
	t.Helper()
	s, err := OpenPairingStore(dir, StoreOptions{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPairingFlow(t *testing.T) {
	clk := newClock()
	store := newStore(t, clk)
	p := mustPolicy(t, Config{}, store)

	first := p.Check(dm("u1"))
	if first.Outcome != Pair {
		t.Fatalf("first message: %+v, want a pairing code", first)
	}
	for _, r := range first.Code {
		if !strings.ContainsRune(CodeAlphabet, r) {
			t.Fatalf("code %q has %q outside the alphabet", first.Code, r)
		}
	}
	if !strings.Contains(first.Reply, "gateway pairing approve discord "+first.Code) {
		t.Fatalf("reply does not say how to approve: %q", first.Reply)
	}
	// The code is issued once: later messages are refused silently.
	again := p.Check(dm("u1"))
	if again.Outcome != Deny || again.Reason != ReasonPairingPending || again.Reply != "" {
		t.Fatalf("second message: %+v, want silent pairing_pending", again)
	}
	pending, err := store.List("discord")
	if err != nil {
		t.Fatal(err)
	}
	want := []Request{{Channel: "discord", AccountID: "default", Code: first.Code, SenderID: "u1",
		ChatID: "dm-u1", CreatedAt: clk.Now(), ExpiresAt: clk.Now().Add(time.Hour)}}
	if diff := cmp.Diff(want, pending); diff != "" {
		t.Fatalf("List (-want +got):\n%s", diff)
	}

	// Approval (lower case is fine) admits the sender, in DMs and for privileges.
	clk.Add(10 * time.Minute)
	a, err := store.Approve("discord", strings.ToLower(first.Code))
	if err != nil {
		t.Fatalf("Approve: %v", err)
	}
	if a.SenderID != "u1" || a.AccountID != "default" {
		t.Fatalf("approval = %+v", a)
	}
	if got := p.Check(dm("u1")); !got.Allowed() {
		t.Fatalf("after approval: %+v", got)
	}
	if !p.Privileged(dm("u1")) {
		t.Fatal("approved sender is not privileged in its DM")
	}
	if pending, _ := store.List(""); len(pending) != 0 {
		t.Fatalf("pending after approval: %v", pending)
	}
	// A code is single use.
	if _, err := store.Approve("discord", first.Code); !errors.Is(err, ErrCodeNotFound) {
		t.Fatalf("second Approve = %v, want ErrCodeNotFound", err)
	}
	// Another account of the same channel does not inherit the approval.
	other := dm("u1")
	other.AccountID = "bot2"
	if got := p.Check(other); got.Allowed() {
		t.Fatalf("approval leaked to another account: %+v", got)
	}
	// Revoke takes it back.
	if ok, err := store.Revoke("discord", "default", "u1"); err != nil || !ok {
		t.Fatalf("Revoke = %v, %v", ok, err)
	}
	if got := p.Check(dm("u1")); got.Outcome != Pair {
		t.Fatalf("after revoke: %+v, want a new code", got)
	}
}

func TestPairingExpiredCodeRefused(t *testing.T) {
	clk := newClock()
	store := newStore(t, clk)
	p := mustPolicy(t, Config{}, store)
	d := p.Check(dm("u1"))
	clk.Add(CodeTTL)
	if l, _ := store.List(""); len(l) != 0 {
		t.Fatalf("List shows an expired code: %v", l)
	}
	if _, err := store.Approve("discord", d.Code); !errors.Is(err, ErrCodeExpired) {
		t.Fatalf("Approve expired = %v, want ErrCodeExpired", err)
	}
	if got := p.Check(dm("u1")); got.Outcome != Pair || got.Code == d.Code {
		t.Fatalf("after expiry: %+v, want a fresh code", got)
	}
}

func TestPairingAtMostThreePending(t *testing.T) {
	clk := newClock()
	store := newStore(t, clk)
	p := mustPolicy(t, Config{}, store)
	codes := map[string]bool{}
	for _, u := range []string{"u1", "u2", "u3"} {
		d := p.Check(dm(u))
		if d.Outcome != Pair {
			t.Fatalf("%s: %+v", u, d)
		}
		codes[d.Code] = true
	}
	if len(codes) != 3 {
		t.Fatalf("codes not unique: %v", codes)
	}
	if got := p.Check(dm("u4")); got.Outcome != Deny || got.Reason != ReasonPairingFull {
		t.Fatalf("fourth sender: %+v, want pairing_full", got)
	}
	// Another account has its own limit.
	in := dm("u4")
	in.AccountID = "bot2"
	if got := p.Check(in); got.Outcome != Pair {
		t.Fatalf("other account: %+v", got)
	}
	// Expired requests free their slots.
	clk.Add(CodeTTL + time.Second)
	if got := p.Check(dm("u4")); got.Outcome != Pair {
		t.Fatalf("after expiry: %+v", got)
	}
}

func TestPairingPersistsAcrossReload(t *testing.T) {
	clk := newClock()
	dir := filepath.Join(t.TempDir(), "pairing")
	s1 := openStore(t, dir, clk)
	p1 := mustPolicy(t, Config{}, s1)
	d := p1.Check(dm("u1"))
	d2 := p1.Check(dm("u2"))

	// A second store on the same directory is what the CLI uses.
	cli := openStore(t, dir, clk)
	l, err := cli.List("")
	if err != nil || len(l) != 2 {
		t.Fatalf("CLI List = %v, %v", l, err)
	}
	if _, err := cli.Approve("discord", d.Code); err != nil {
		t.Fatal(err)
	}
	// The running daemon sees the CLI's approval without a restart.
	if got := p1.Check(dm("u1")); !got.Allowed() {
		t.Fatalf("daemon did not see approval: %+v", got)
	}
	// A reload (new store, new policy) keeps both the approval and the pending code.
	s3 := openStore(t, dir, clk)
	p3 := mustPolicy(t, Config{}, s3)
	if got := p3.Check(dm("u1")); !got.Allowed() {
		t.Fatalf("after reload: %+v", got)
	}
	if got := p3.Check(dm("u2")); got.Reason != ReasonPairingPending {
		t.Fatalf("pending code lost on reload: %+v", got)
	}
	if _, err := s3.Approve("discord", d2.Code); err != nil {
		t.Fatal(err)
	}

	path := filepath.Join(dir, "discord.json")
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v, want 0600", st.Mode().Perm())
	}
	var f struct {
		Version int        `json:"version"`
		Pending []Request  `json:"pending"`
		Allowed []Approval `json:"allowed"`
	}
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if f.Version != 1 || len(f.Allowed) != 2 || len(f.Pending) != 0 {
		t.Fatalf("file = %+v", f)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Fatalf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestPairingConcurrentStores(t *testing.T) {
	// Two stores (two processes) issuing codes at once never lose a request.
	clk := newClock()
	dir := filepath.Join(t.TempDir(), "pairing")
	a, b := openStore(t, dir, clk), openStore(t, dir, clk)
	var wg sync.WaitGroup
	for i, s := range []*PairingStore{a, b, a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			acct := []string{"x", "y"}[i%2]
			if _, _, err := s.Request("telegram", acct, string(rune('a'+i)), "", "", true); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	l, err := openStore(t, dir, clk).List("telegram")
	if err != nil || len(l) != 6 {
		t.Fatalf("List = %d requests, %v; want 6", len(l), err)
	}
}

func TestPairingBadChannel(t *testing.T) {
	s := newStore(t, newClock())
	for _, ch := range []string{"", "../x", "a/b", "UPPER"} {
		if _, err := s.Approve(ch, "ABCDEFGH"); err == nil || errors.Is(err, ErrCodeNotFound) {
			t.Errorf("Approve(%q) = %v, want a channel error", ch, err)
		}
	}
}

func TestPairingCorruptFile(t *testing.T) {
	clk := newClock()
	dir := filepath.Join(t.TempDir(), "pairing")
	s := openStore(t, dir, clk)
	if err := os.WriteFile(filepath.Join(dir, "discord.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := mustPolicy(t, Config{}, s)
	if got := p.Check(dm("u1")); got.Outcome != Deny || got.Reason != ReasonPairingError {
		t.Fatalf("corrupt store: %+v, want pairing_error", got)
	}
}

func TestPairingOddSenderNameStored(t *testing.T) {
	// A display name from a chat that a backend cannot store as it is (NUL,
	// invalid UTF-8, control characters, megabytes) is cleaned, not refused:
	// the sender still gets a code.
	clk := newClock()
	s := newStore(t, clk)
	name := "Ann\x00\x1b[31m\xff" + strings.Repeat("é", 1000)
	req, created, err := s.Request("telegram", "default", "42", name, "42", true)
	if err != nil || !created {
		t.Fatalf("Request = %+v, %v, %v", req, created, err)
	}
	if strings.ContainsAny(req.SenderName, "\x00\x1b") || len(req.SenderName) > maxNameBytes ||
		!strings.HasPrefix(req.SenderName, "Ann[31m\uFFFDé") {
		t.Errorf("stored name %q", req.SenderName)
	}
	l, err := s.List("telegram")
	if err != nil || len(l) != 1 || l[0].SenderName != req.SenderName {
		t.Errorf("List = %+v, %v", l, err)
	}
	// A sender id the state cannot store is an error, not a code.
	if _, _, err := s.Request("telegram", "default", "a\x00b", "", "", true); err == nil {
		t.Error("Request with a NUL in the sender id succeeded")
	}
}

// TestEventOfUnknownSenderCreatesNoPairingRequest: an edit or a reaction
// of a sender whose code expired is refused without a new code (it gets
// no answer to carry one), so the sender's next message gets the code.
func TestEventOfUnknownSenderCreatesNoPairingRequest(t *testing.T) {
	for _, kind := range []string{channels.EventEdit, channels.EventReaction} {
		t.Run(kind, func(t *testing.T) {
			clk := newClock()
			store := newStore(t, clk)
			p := mustPolicy(t, Config{}, store)
			if d := p.Check(dm("u2")); d.Outcome != Pair {
				t.Fatalf("first message: %+v, want a code", d)
			}
			clk.Add(2 * CodeTTL)
			ev := dm("u2")
			ev.Event = &channels.Event{Kind: kind, Stamp: "1"}
			if d := p.Check(ev); d.Outcome != Deny || d.Reason != ReasonNotAllowlisted {
				t.Fatalf("event: %+v, want a refusal without a code", d)
			}
			if pending, err := store.List("discord"); err != nil || len(pending) != 0 {
				t.Fatalf("pending after the event = %v, %v; want none", pending, err)
			}
			if d := p.Check(dm("u2")); d.Outcome != Pair || !strings.Contains(d.Reply, d.Code) {
				t.Fatalf("next message: %+v, want a new code", d)
			}
		})
	}
}
