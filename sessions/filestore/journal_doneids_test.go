package filestore

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// writeDoneLog writes a journal of n done ids (one line each, as a rewrite
// leaves them) under dir, done at at.
func writeDoneLog(t testing.TB, dir string, n int, at time.Time) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	ts := at.UTC().Format(time.RFC3339Nano)
	for i := range n {
		fmt.Fprintf(&buf, `{"op":"done","ids":["telegram:main:-100123456789:%d"],"at":%q}`+"\n", i, ts)
	}
	if err := os.WriteFile(filepath.Join(dir, "journal.jsonl"), buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// heapBytes is the live heap after a full collection.
func heapBytes() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// A day of done ids is half a million on a busy bot (issue 21): what the
// journal holds for each is its memory. A map of id to time.Time beside an
// order slice of the ids took 128 heap bytes an id here (166 at 500,000;
// 48 of them the id's string); the chunks of ids and times with their
// 8-byte slots take 72. The bound sits between, 28 from each.
func TestJournalDoneIDsHeapPerID(t *testing.T) {
	const n, bound = 100_000, 100
	dir := t.TempDir()
	writeDoneLog(t, dir, n, time.Now())
	before := heapBytes()
	j := openTestJournal(t, dir, nil)
	after := heapBytes()
	runtime.KeepAlive(j)
	if got := doneCount(j); got != n {
		t.Fatalf("the journal remembers %d done ids; want %d", got, n)
	}
	per := float64(int64(after)-int64(before)) / n
	t.Logf("%.1f heap bytes a done id", per)
	if per > bound {
		t.Errorf("the journal holds %.1f heap bytes a done id; want at most %d", per, bound)
	}
}

// The rewrite copies the journal's state under j.mu, holding every write:
// the copy of the done ids must not grow with them (until issue 21 it
// cloned the order and looked every id up in the map, 40 bytes and a
// lookup an id: 4 MB and ~6 ms at 100,000).
func TestJournalRewriteCopyUnderLockDoesNotGrowWithDoneIDs(t *testing.T) {
	const n = 100_000
	dir := t.TempDir()
	writeDoneLog(t, dir, n, time.Now())
	j := openTestJournal(t, dir, nil)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	j.mu.Lock()
	st, err := j.stateLocked()
	j.mu.Unlock()
	runtime.ReadMemStats(&ms)
	if err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(st)
	if got := ms.TotalAlloc - before; got > 64<<10 {
		t.Errorf("copying the state of %d done ids under the lock allocated %d bytes; want at most 64 KB, not a copy of each id", n, got)
	}
}

func doneCount(j *Journal) int { return j.done.len() }

// doneModel is doneIDs as a map and a slice: what the set must hold.
type doneModel struct {
	order []doneModelEnt
	at    map[string]int // index in order of the id's live entry
	base  int            // entries popped from the front
}

type doneModelEnt struct {
	id   string
	at   int64
	dead bool
}

func (m *doneModel) add(id string, at int64) {
	if i, ok := m.at[id]; ok {
		if m.order[i-m.base].at >= at {
			return
		}
		m.order[i-m.base].dead = true
	}
	m.order = append(m.order, doneModelEnt{id: id, at: at})
	m.at[id] = m.base + len(m.order) - 1
}

func (m *doneModel) forget(keep int, cutoff, ahead int64) {
	for len(m.at) > keep {
		e := m.order[0]
		if !e.dead {
			if e.at > cutoff && e.at <= ahead {
				return
			}
			delete(m.at, e.id)
		}
		m.order = m.order[1:]
		m.base++
	}
}

// doneIDs against a model, through growth and shrinking of its table,
// chunks filled by count and by bytes, ids done again, empty and long ids,
// and positions that wrap past 2^32.
func TestDoneIDsMatchesModel(t *testing.T) {
	for _, start := range []uint32{0, math.MaxUint32 - 3*doneChunkLen/2} {
		t.Run(fmt.Sprint(start), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(start)))
			d := newDoneIDs()
			d.first = start
			m := &doneModel{at: map[string]int{}}
			long := strings.Repeat("L", doneChunkBytes+10)
			var clock int64
			for step := range 60_000 {
				clock += int64(rng.IntN(3))
				var id string
				switch r := rng.IntN(1000); {
				case r == 0:
					id = ""
				case r == 1:
					id = long + fmt.Sprint(rng.IntN(3))
				case r < 200:
					id = fmt.Sprint("again:", rng.IntN(500)) // done again, often
				default:
					id = fmt.Sprint("telegram:main:-100123:", step)
				}
				at := clock - int64(rng.IntN(5))
				d.add(id, time.Unix(0, at))
				m.add(id, at)
				if rng.IntN(50) == 0 {
					// A burst of forgetting now and then, so the set grows
					// and shrinks.
					keep, cutoff := rng.IntN(3000), clock-int64(rng.IntN(20_000))
					ahead := cutoff + int64(rng.IntN(40_000)) // at times before some ids' (the clock set back)
					d.forget(keep, time.Unix(0, cutoff), time.Unix(0, ahead))
					m.forget(keep, cutoff, ahead)
				}
				if d.len() != len(m.at) {
					t.Fatalf("step %d: %d ids; the model has %d", step, d.len(), len(m.at))
				}
				for range 3 {
					probe := fmt.Sprint("again:", rng.IntN(600))
					if rng.IntN(2) == 0 {
						probe = fmt.Sprint("telegram:main:-100123:", rng.IntN(step+10))
					}
					if _, want := m.at[probe]; d.has(probe) != want {
						t.Fatalf("step %d: has(%q) = %v; want %v", step, probe, !want, want)
					}
				}
				if step%5000 == 0 || step == 59_999 {
					checkDoneView(t, d, m)
				}
			}
		})
	}
}

// checkDoneView compares d's view with the model's entries, dead ones
// included (the view may write an id twice).
func checkDoneView(t *testing.T, d *doneIDs, m *doneModel) {
	t.Helper()
	i := 0
	d.view().each(func(id string, at time.Time) {
		if i >= len(m.order) {
			t.Fatalf("view holds more than the model's %d entries", len(m.order))
		}
		if e := m.order[i]; e.id != id || e.at != at.UnixNano() {
			t.Fatalf("view entry %d = %.40q at %d; want %.40q at %d", i, id, at.UnixNano(), e.id, e.at)
		}
		i++
	})
	if i != len(m.order) {
		t.Fatalf("view holds %d entries; the model %d", i, len(m.order))
	}
	if n := d.view().len(); n != i {
		t.Fatalf("view len %d; each gave %d", n, i)
	}
	// Each slot names the live entry of an id of its table.
	slots := 0
	for k := range d.tables {
		tb := &d.tables[k]
		n := 0
		for _, s := range tb.slots {
			if s == 0 {
				continue
			}
			n++
			id := string(d.idAt(uint32(s)))
			if got, tag := d.table(maphash.String(d.seed, id)); got != tb || uint32(s>>32) != tag {
				t.Fatalf("table %d holds %.40q of another table or tag", k, id)
			}
			if at, ok := m.at[id]; !ok || m.order[at-m.base].at != d.ent(uint32(s)).at {
				t.Fatalf("table %d names an entry of %.40q the model does not hold live", k, id)
			}
		}
		if n != tb.n {
			t.Fatalf("table %d counts %d slots; holds %d", k, tb.n, n)
		}
		slots += n
	}
	if slots != d.live {
		t.Fatalf("%d slots for %d ids", slots, d.live)
	}
}

// A rewrite encodes its view of the done ids without the journal's lock
// while marks add and forget ids: the view must read what the set held
// when it was taken, and nothing it reads may be written meanwhile (-race
// reports a write to it).
func TestDoneViewUnchangedByLaterChanges(t *testing.T) {
	for _, n := range []int{5, 3 * doneChunkLen} { // the first chunk growing; full chunks
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var mu sync.Mutex
			d := newDoneIDs()
			for i := range n {
				d.add(fmt.Sprint("id:", i), time.Unix(0, int64(i)))
			}
			want := lines(d.view())
			mu.Lock()
			v := d.view()
			mu.Unlock()
			changed := make(chan struct{})
			go func() {
				defer close(changed)
				for i := range 2 * doneChunkLen {
					mu.Lock()
					d.add(fmt.Sprint("id:", i%(n+7)), time.Unix(0, int64(n+i))) // done again, or new
					d.add(fmt.Sprint("new:", i), time.Unix(0, int64(n+i)))
					d.forget(n/2, time.Unix(0, int64(n+i)), time.Unix(0, math.MaxInt64))
					mu.Unlock()
				}
			}()
			got := lines(v)
			<-changed
			if again := lines(v); !slices.Equal(got, want) || !slices.Equal(again, want) {
				t.Errorf("the view changed under the set's changes: %d and %d entries, want %d", len(got), len(again), len(want))
			}
		})
	}
}

// doneAt is when d has id done.
func doneAt(d *doneIDs, id string) (int64, bool) {
	t, tag := d.table(maphash.String(d.seed, id))
	i, ok := d.find(t, id, tag)
	if !ok {
		return 0, false
	}
	return d.ent(uint32(t.slots[i])).at, true
}

func lines(v doneView) []string {
	var out []string
	v.each(func(id string, at time.Time) { out = append(out, fmt.Sprint(id, " ", at.UnixNano())) })
	return out
}

// An id done twice in a log (replayed) is remembered from the later time;
// the rewrite may write both lines, and the log it leaves replays to the
// same ids and times.
func TestJournalIDDoneAgainSurvivesARewrite(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	t1 := t0.Add(23 * time.Hour)
	log := fmt.Sprintf(`{"op":"done","ids":["a"],"at":%q}
{"op":"done","ids":["b"],"at":%q}
{"op":"done","ids":["a"],"at":%q}
{"op":"done","ids":["a"],"at":%q}
`, t0.Format(time.RFC3339Nano), t0.Format(time.RFC3339Nano), t1.Format(time.RFC3339Nano), t0.Format(time.RFC3339Nano))
	if err := os.WriteFile(filepath.Join(dir, "journal.jsonl"), []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	want := []string{"2 ids", fmt.Sprint("b ", t0.UnixNano()), fmt.Sprint("a ", t1.UnixNano())}
	remembered := func(j *Journal) []string {
		j.mu.Lock()
		defer j.mu.Unlock()
		got := []string{fmt.Sprint(j.done.len(), " ids")}
		for _, id := range []string{"b", "a"} {
			if at, ok := doneAt(j.done, id); ok {
				got = append(got, fmt.Sprint(id, " ", at))
			}
		}
		return got
	}
	j := openTestJournal(t, dir, nil)
	if got := remembered(j); !slices.Equal(got, want) {
		t.Fatalf("replayed: %q; want %q", got, want)
	}
	j.mu.Lock()
	err := j.compactLocked()
	j.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	_ = j.close()
	j2 := openTestJournal(t, dir, nil)
	if got := remembered(j2); !slices.Equal(got, want) {
		t.Errorf("after a rewrite: %q; want %q", got, want)
	}
}

// Forgetting every id of a set whose only chunk is full, then adding and
// forgetting again (a journal whose doneKeep is below a chunk's length):
// the used-up front chunk is dropped when a later one holds the ids (an
// index past its entries panicked).
func TestDoneIDsForgetAfterTheOnlyChunkWasUsedUp(t *testing.T) {
	d := newDoneIDs()
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i := range doneChunkLen {
		d.add(fmt.Sprint("a", i), now)
	}
	d.forget(0, now.Add(time.Hour), now.Add(2*time.Hour))
	if d.len() != 0 {
		t.Fatalf("%d ids left, want none", d.len())
	}
	d.add("b", now)
	d.add("c", now.Add(2*time.Hour))
	if !d.has("b") || !d.has("c") || d.has("a1") {
		t.Fatal("after the front chunk was used up: b and c not found, or a1 still there")
	}
	d.forget(0, now.Add(time.Hour), now.Add(2*time.Hour))
	if d.len() != 1 || d.has("b") || !d.has("c") {
		t.Fatalf("after forgetting b: %d ids, b %v, c %v; want c alone", d.len(), d.has("b"), d.has("c"))
	}
	var ids []string
	d.view().each(func(id string, _ time.Time) { ids = append(ids, id) })
	if len(ids) != 1 || ids[0] != "c" {
		t.Fatalf("view = %v, want [c]", ids)
	}
}

// A day of ids done while the clock was a year ahead (a board without a
// clock battery, a wrong NTP server), then the clock set right: the front
// id, done "next year", held every later one, forgotten at no cutoff for
// a year (the set and every rewrite of the log grew all that time). Once
// more than doneKeep are remembered, an id done at a time the clock has
// not reached goes as if old; the newest doneKeep stay.
func TestDoneIDsForgottenAfterTheClockWasSetBack(t *testing.T) {
	dir := t.TempDir()
	now := time.Now().UTC()
	var b strings.Builder
	line := func(id string, at time.Time) {
		fmt.Fprintf(&b, `{"op":"done","ids":[%q],"at":%q}`+"\n", id, at.Format(time.RFC3339Nano))
	}
	line("ahead", now.AddDate(1, 0, 0))
	for i := range 20 {
		line(fmt.Sprint("old:", i), now.Add(-48*time.Hour)) // the clock set right, two days ago
	}
	if err := os.WriteFile(filepath.Join(dir, "journal.jsonl"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	j := openTestJournal(t, dir, nil)
	j.mu.Lock()
	j.doneKeep = 5
	j.rememberDoneLocked("new", now)
	n, ahead, latest := j.done.len(), j.done.has("ahead"), j.done.has("old:19")
	j.mu.Unlock()
	if n != 5 || ahead || !latest {
		t.Fatalf("after the clock was set back: %d ids, the one done ahead remembered %v, the latest old one %v; want 5, false, true", n, ahead, latest)
	}
}
