package sessionstest

import (
	"context"
	"fmt"
	"testing"

	"github.com/gateway/gateway/internal/pairstate"
	"github.com/gateway/gateway/sessions"
)

// BenchPairing measures a pairing state holding one channel with 3
// pending requests and 100 approved senders: LoadPairing (what an
// approval check of an unknown sender costs) and UpdatePairing adding and
// removing one approval (what approve and revoke cost). Each backend calls
// it from a benchmark of its own, so the figures line up side by side.
func BenchPairing(b *testing.B, ps sessions.PairingState) {
	ctx := context.Background()
	err := ps.UpdatePairing(ctx, "telegram", func(d *pairstate.Data) (bool, error) {
		for i := range 3 {
			d.Pending = append(d.Pending, request("telegram", "default", fmt.Sprint("p", i), i))
		}
		for i := range 100 {
			d.Allowed = append(d.Allowed, approval("telegram", "default", fmt.Sprint("u", i), i))
		}
		return true, nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Load", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			d, err := ps.LoadPairing(ctx, "telegram")
			if err != nil || len(d.Allowed) != 100 {
				b.Fatalf("LoadPairing = %d approvals, %v", len(d.Allowed), err)
			}
		}
	})
	b.Run("Update", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			n++
			err := ps.UpdatePairing(ctx, "telegram", func(d *pairstate.Data) (bool, error) {
				if n%2 == 1 {
					d.Allowed = append(d.Allowed, approval("telegram", "default", "extra", n))
				} else {
					d.Allowed = d.Allowed[:len(d.Allowed)-1]
				}
				return true, nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}
