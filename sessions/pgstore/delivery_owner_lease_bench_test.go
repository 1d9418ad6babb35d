package pgstore

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkRenewBacklog: one lease renewal of a handle holding 100 or
// 10,000 pending records (issue 21: the renewal rewrote every one of them
// every Lease/3). rows/op is the rows one renewal writes (row versions
// changed among the handle's records and replies, plus its owner row
// where the schema has one), counted after the timed loop.
func BenchmarkRenewBacklog(b *testing.B) {
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprintf("pending=%d", n), func(b *testing.B) {
			ctx := context.Background()
			d := openBench(b, 4).Delivery(DeliveryOptions{})
			b.Cleanup(func() { _ = d.Close() })
			if _, err := d.db.pool.Exec(ctx, `INSERT INTO delivery_records (id, seq, agent_id, session_key, payload, accepted_at, owner, lease_until)
				SELECT 'p' || g, nextval('delivery_seq'), 'main', 'agent:main:telegram:group:' || (g % 100), '{}',
					now(), $1, 'infinity'
				FROM generate_series(1, $2) g`, d.Owner(), n); err != nil {
				b.Fatal(err)
			}
			if _, err := d.db.pool.Exec(ctx, `VACUUM ANALYZE delivery_records`); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if err := d.Renew(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(rowsWrittenByRenew(b, d)), "rows/op")
		})
	}
}

// rowsWrittenByRenew counts the rows one Renew of d writes.
func rowsWrittenByRenew(b *testing.B, d *Delivery) int {
	ctx := context.Background()
	versions := func() map[string]string {
		v := rowVersions(b, d.db, d.Owner())
		var owners bool
		if err := d.db.pool.QueryRow(ctx, `SELECT to_regclass('delivery_owners') IS NOT NULL`).Scan(&owners); err != nil {
			b.Fatal(err)
		}
		if owners {
			var x string
			if err := d.db.pool.QueryRow(ctx, `SELECT xmin::text FROM delivery_owners WHERE owner = $1`, d.Owner()).Scan(&x); err != nil {
				b.Fatal(err)
			}
			v["owner"] = x
		}
		return v
	}
	before := versions()
	if err := d.Renew(ctx); err != nil {
		b.Fatal(err)
	}
	n := 0
	for id, x := range versions() {
		if before[id] != x {
			n++
		}
	}
	return n
}
