package pgstore

import (
	"testing"

	"github.com/gateway/gateway/sessions/sessionstest"
)

func benchDelivery(b *testing.B) *Delivery {
	b.Helper()
	d := openBench(b, 16).Delivery(DeliveryOptions{})
	b.Cleanup(func() { _ = d.Close() })
	return d
}

// BenchmarkDeliveryAcceptDone: Accept (committed) + Done on PostgreSQL.
func BenchmarkDeliveryAcceptDone(b *testing.B) { sessionstest.BenchAcceptDone(b, benchDelivery(b)) }

// BenchmarkDeliveryReadySent: Ready + Sent of two chunks on PostgreSQL.
func BenchmarkDeliveryReadySent(b *testing.B) { sessionstest.BenchReadySent(b, benchDelivery(b)) }

// BenchmarkDeliveryReadySentSync is BenchmarkDeliveryReadySent with every
// mark waiting for its WAL flush (DeliveryOptions.SyncMarks).
func BenchmarkDeliveryReadySentSync(b *testing.B) {
	d := openBench(b, 4).Delivery(DeliveryOptions{SyncMarks: true})
	b.Cleanup(func() { _ = d.Close() })
	sessionstest.BenchReadySent(b, d)
}

// BenchmarkDeliveryAcceptParallel: Accept + Done from many goroutines on the PostgreSQL.
func BenchmarkDeliveryAcceptParallel(b *testing.B) {
	sessionstest.BenchAcceptParallel(b, benchDelivery(b))
}
