package channels

import (
	"context"
	"errors"
	"sync"
)

// Batch lets an adapter that acknowledges several messages at once (the
// Telegram poller confirms a whole getUpdates batch with its next offset)
// share one durability wait among them: a Handler called with a context
// from WithBatch may return nil before what it accepted is durable, after
// registering the wait with Defer; the adapter calls Wait before it
// acknowledges any message of the batch, and acknowledges none of them if
// Wait fails. Without a Batch in the context a Handler's nil means durable
// at once (the Handler contract).
//
// A Batch is safe for concurrent use.
type Batch struct {
	mu    sync.Mutex
	waits []func() error // guarded by mu
}

type batchKey struct{}

// WithBatch returns a context carrying a new Batch, and the Batch.
func WithBatch(ctx context.Context) (context.Context, *Batch) {
	b := &Batch{}
	return context.WithValue(ctx, batchKey{}, b), b
}

// BatchFrom returns the Batch of ctx, or nil.
func BatchFrom(ctx context.Context) *Batch {
	b, _ := ctx.Value(batchKey{}).(*Batch)
	return b
}

// Defer registers wait, which returns once something the handler accepted
// is durable.
func (b *Batch) Defer(wait func() error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.waits = append(b.waits, wait)
}

// Wait runs every registered wait and returns their errors joined; the
// Batch is empty afterwards.
func (b *Batch) Wait() error {
	b.mu.Lock()
	waits := b.waits
	b.waits = nil
	b.mu.Unlock()
	var errs []error
	for _, w := range waits {
		if err := w(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
