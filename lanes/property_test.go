package lanes

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// world checks the invariants while a random workload runs: one run (or
// Do) at a time per key, class caps, batches of one Group in arrival
// order, and every item accounted for exactly once.
type world struct {
	t    *testing.T
	caps map[Class]int

	mu       sync.Mutex
	settings map[string]Settings
	busy     map[string]int
	active   map[Class]int
	maxSeen  map[Class]int
	fate     map[string][]string // item ID -> what happened to it
}

func (w *world) setFate(id, f string) {
	w.fate[id] = append(w.fate[id], f)
}

func (w *world) enter(key string, class Class, isRun bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.busy[key]++
	if w.busy[key] > 1 {
		w.t.Errorf("key %s: %d runs/Do at once", key, w.busy[key])
	}
	if isRun {
		w.active[class]++
		if w.active[class] > w.caps[class] {
			w.t.Errorf("class %s: %d runs at once, cap %d", class, w.active[class], w.caps[class])
		}
		w.maxSeen[class] = max(w.maxSeen[class], w.active[class])
	}
}

func (w *world) leave(key string, class Class, isRun bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.busy[key]--
	if isRun {
		w.active[class]--
	}
}

// took records items handed to a run, checking Group and order.
func (w *world) took(key string, items []Item, how string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, it := range items {
		if it.Group != items[0].Group {
			w.t.Errorf("key %s: batch mixes groups %q and %q", key, items[0].Group, it.Group)
		}
		if i > 0 && it.At.Before(items[i-1].At) {
			w.t.Errorf("key %s: batch out of arrival order", key)
		}
		w.setFate(it.ID, how)
	}
}

func (w *world) run(ctx context.Context, b Batch[string]) {
	w.enter(b.Key, b.Class, true)
	defer w.leave(b.Key, b.Class, true)
	w.took(b.Key, b.Items, "run")
	w.mu.Lock()
	for _, it := range b.Dropped {
		w.setFate(it.ID, "summarized")
	}
	w.mu.Unlock()
	r := rand.New(rand.NewPCG(uint64(len(b.Items)), uint64(b.Items[0].At.UnixNano())))
	for range r.IntN(3) + 1 {
		if b.Steer != nil {
			w.took(b.Key, b.Steer(), "steer")
		}
		select {
		case <-time.After(time.Duration(r.IntN(300)) * time.Millisecond):
		case <-ctx.Done():
			return
		}
	}
}

func (w *world) settingsFor(key string) Settings {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.settings[key]
}

func randomSettings(r *rand.Rand) Settings {
	modes := []Mode{Collect, Followup, Steer, Interrupt, ""}
	drops := []Drop{DropSummarize, DropOld, DropNew, ""}
	debounces := []time.Duration{-1, 0, 50 * time.Millisecond, 400 * time.Millisecond}
	return Settings{
		Mode:     modes[r.IntN(len(modes))],
		Debounce: debounces[r.IntN(len(debounces))],
		Cap:      r.IntN(5),
		Drop:     drops[r.IntN(len(drops))],
	}
}

func TestPropertyRandomArrivals(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { propertyRun(t, seed) })
		})
	}
}

func propertyRun(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 7))
	w := &world{
		t:        t,
		caps:     map[Class]int{ClassMain: 1 + r.IntN(3), ClassSubagent: 1 + r.IntN(2)},
		settings: map[string]Settings{},
		busy:     map[string]int{},
		active:   map[Class]int{},
		maxSeen:  map[Class]int{},
		fate:     map[string][]string{},
	}
	nkeys := 2 + r.IntN(6)
	keys := make([]string, nkeys)
	classOf := map[string]Class{}
	for i := range keys {
		keys[i] = "k" + strconv.Itoa(i)
		classOf[keys[i]] = ClassMain
		if i%3 == 2 {
			classOf[keys[i]] = ClassSubagent
		}
		w.settings[keys[i]] = randomSettings(r)
	}
	q := New(Options[string]{
		Caps:     w.caps,
		Settings: w.settingsFor,
		Run:      w.run,
		OnDrop: func(key string, it Item) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.setFate(it.ID, "drop")
		},
	})
	var ids []string
	var dos sync.WaitGroup
	for n := range 300 {
		time.Sleep(time.Duration(r.IntN(120)) * time.Millisecond)
		key := keys[r.IntN(nkeys)]
		switch x := r.IntN(100); {
		case x < 80:
			id := fmt.Sprintf("i%d", n)
			ids = append(ids, id)
			it := Item{ID: id, Group: []string{"a", "b"}[r.IntN(2)], Summary: "s-" + id}
			err := q.Enqueue(key, classOf[key], it)
			w.mu.Lock()
			switch {
			case errors.Is(err, ErrFull):
				w.setFate(id, "full")
			case err != nil:
				t.Errorf("Enqueue: %v", err)
			}
			w.mu.Unlock()
		case x < 88:
			d := time.Duration(r.IntN(200)) * time.Millisecond
			dos.Go(func() {
				err := q.Do(t.Context(), key, func(context.Context) {
					w.enter(key, "", false)
					time.Sleep(d)
					w.leave(key, "", false)
				})
				if err != nil {
					t.Errorf("Do: %v", err)
				}
			})
		case x < 92:
			got := q.Cancel(key)
			w.mu.Lock()
			for _, it := range got {
				w.setFate(it.ID, "cancel")
			}
			w.mu.Unlock()
		case x < 95:
			// A config reload or /queue override.
			w.mu.Lock()
			w.settings[key] = randomSettings(r)
			w.mu.Unlock()
		}
	}
	dos.Wait()
	time.Sleep(time.Minute)
	synctest.Wait()
	for _, k := range keys {
		if d := q.Depth(k); d != 0 {
			t.Errorf("key %s: depth %d after the workload drained", k, d)
		}
	}
	assertForgotten(t, q)
	if left := shutdown(t, q); len(left) != 0 {
		t.Errorf("Shutdown returned %d items after the workload drained", len(left))
	}

	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		if f := w.fate[id]; len(f) != 1 {
			t.Errorf("item %s: fates %v, want exactly one", id, f)
		}
	}
}
