package sessions

import (
	"context"

	"github.com/gateway/gateway/routing"
)

// DeliveryRecorder is implemented by an Index that can record where a
// session's reply was delivered (Entry.DeliveryContext) without the read,
// lock and write of a Patch: the PostgreSQL backend, where a Patch costs
// a transaction of four round trips and the record is informational (no
// delivery reads it). The effect is Patch's setting DeliveryContext
// (updatedAt moves), written as a routine update: visible when it
// returns, durable after the next Flush. A key without a session is
// skipped (no error).
type DeliveryRecorder interface {
	RecordDelivery(ctx context.Context, key routing.Key, dc DeliveryContext) error
}
