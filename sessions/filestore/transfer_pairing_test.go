package filestore_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gateway/gateway/internal/pairstate"
	"github.com/gateway/gateway/sessions/transfer"
)

// memPairing is an in-memory PairingState.
type memPairing struct {
	mu sync.Mutex
	m  map[string]pairstate.Data
}

func (p *memPairing) LoadPairing(ctx context.Context, ch string) (pairstate.Data, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.m[ch], nil
}

func (p *memPairing) UpdatePairing(ctx context.Context, ch string, fn func(*pairstate.Data) (bool, error)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := p.m[ch]
	changed, err := fn(&d)
	if err == nil && changed {
		p.m[ch] = d
	}
	return err
}

func (p *memPairing) PairingChannels(ctx context.Context) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for ch := range p.m {
		out = append(out, ch)
	}
	slices.Sort(out)
	return out, nil
}

func TestCopyPairing(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 11, 20, 10, 0, 0, 123456789, time.Local)
	from := &memPairing{m: map[string]pairstate.Data{
		"telegram": {Pending: []pairstate.Request{{Channel: "telegram", AccountID: "default", Code: "ABCD1234",
			SenderID: "42", CreatedAt: at, ExpiresAt: at.Add(time.Hour)}},
			Allowed: []pairstate.Approval{{Channel: "telegram", AccountID: "default", SenderID: "7", ApprovedAt: at}}},
		"discord": {Allowed: []pairstate.Approval{{Channel: "discord", SenderID: "x\x00y", ApprovedAt: at}}},
	}}
	to := &memPairing{m: map[string]pairstate.Data{}}
	n, err := transfer.CopyPairing(ctx, from, to, false)
	if err != nil || n != 2 {
		t.Fatalf("copy: %d, %v", n, err)
	}
	if chans, diffs, err := transfer.ComparePairing(ctx, from, to); err != nil || chans != 2 || len(diffs) > 0 {
		t.Fatalf("compare: %d %v %v", chans, diffs, err)
	}
	if n, err := transfer.CopyPairing(ctx, from, to, false); err != nil || n != 0 {
		t.Fatalf("second copy: %d, %v", n, err)
	}
	to.m["telegram"] = pairstate.Data{Allowed: []pairstate.Approval{{Channel: "telegram", SenderID: "other"}}}
	if _, err := transfer.CopyPairing(ctx, from, to, false); err == nil || !strings.Contains(err.Error(), `"telegram"`) {
		t.Fatalf("conflict: %v", err)
	}
	if n, err := transfer.CopyPairing(ctx, from, to, true); err != nil || n != 1 {
		t.Fatalf("overwrite: %d, %v", n, err)
	}
}
