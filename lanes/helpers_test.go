package lanes

import (
	"context"
	"sync"
	"testing"
	"time"
)

// batchRec is a batch as a run saw it.
type batchRec struct {
	Key     string
	IDs     []string
	Dropped []string
	At      time.Duration // since the test's t0
}

// recorder collects batches and lets a test block chosen runs.
type recorder struct {
	t0 time.Time

	mu      sync.Mutex
	batches []batchRec
	dropped []string // OnDrop item IDs
	gates   map[string]chan struct{}
	hook    func(ctx context.Context, b Batch[string])
}

func newRecorder() *recorder {
	return &recorder{t0: time.Now(), gates: map[string]chan struct{}{}}
}

// gate makes the run whose first item is id block until release(id).
func (r *recorder) gate(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gates[id] = make(chan struct{})
}

func (r *recorder) release(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	close(r.gates[id])
}

func (r *recorder) run(ctx context.Context, b Batch[string]) {
	rec := batchRec{Key: b.Key, At: time.Since(r.t0)}
	for _, it := range b.Dropped {
		rec.Dropped = append(rec.Dropped, it.Summary)
	}
	for _, it := range b.Items {
		rec.IDs = append(rec.IDs, it.ID)
	}
	r.mu.Lock()
	r.batches = append(r.batches, rec)
	g := r.gates[b.Items[0].ID]
	hook := r.hook
	r.mu.Unlock()
	if hook != nil {
		hook(ctx, b)
	}
	if g != nil {
		<-g
	}
}

func (r *recorder) onDrop(_ string, it Item) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropped = append(r.dropped, it.ID)
}

func (r *recorder) got() []batchRec {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]batchRec(nil), r.batches...)
}

func (r *recorder) gotDropped() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.dropped...)
}

func fixed(s Settings) func(string) Settings { return func(string) Settings { return s } }

func item(id, group string) Item { return Item{ID: id, Group: group, Summary: "sum " + id} }

func mustEnqueue(t *testing.T, q *Queue[string], key string, it Item) {
	t.Helper()
	if err := q.Enqueue(key, ClassMain, it); err != nil {
		t.Fatalf("Enqueue(%s, %s): %v", key, it.ID, err)
	}
}

func shutdown(t *testing.T, q *Queue[string]) []Item {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return q.Shutdown(ctx)
}

// assertForgotten checks that no key state is left once everything is idle.
func assertForgotten(t *testing.T, q *Queue[string]) {
	t.Helper()
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.keys) != 0 {
		t.Errorf("idle queue still holds %d keys", len(q.keys))
	}
	for c, n := range q.active {
		if n != 0 {
			t.Errorf("class %s has %d active runs, want 0", c, n)
		}
	}
}

// errBox records errors seen by runs.
type errBox struct {
	mu   sync.Mutex
	errs []error
}

func (e *errBox) add(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.errs = append(e.errs, err)
}

func (e *errBox) get() []error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]error(nil), e.errs...)
}
