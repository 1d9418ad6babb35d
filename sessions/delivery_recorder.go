package sessions

import "github.com/gateway/gateway/routing"

// DeliveryRecorder is implemented by an Index that can record where a
// session's reply was delivered (Entry.DeliveryContext) without the read,
// lock and write of a Patch: the PostgreSQL backend, where a Patch costs
// a transaction of four round trips and the record is informational (no
// delivery reads it). The effect is Patch's setting DeliveryContext
// (updatedAt moves), written as a routine update: visible once written,
// durable after the next Flush, never failing the caller. A key without
// a session is skipped. done, when not nil, gets the outcome once the
// write is over (nil also when the key had no session); it must not block.
type DeliveryRecorder interface {
	RecordDelivery(key routing.Key, dc DeliveryContext, done func(error))
}
