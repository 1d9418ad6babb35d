package filestore

import (
	"hash/maphash"
	"math"
	"time"
	"unsafe"
)

// doneIDs is the set of finished record ids a Journal remembers to drop
// redeliveries (sessions.DoneRetention, sessions.DoneKeep), oldest first.
//
// A day of a busy bot is half a million ids (issue 21), so the set is
// built for its bytes and for the rewrite's copy. The ids' bytes and their
// times are appended to chunks, never written again once appended, and
// dropped whole from the front; open-addressing tables of 8-byte slots
// find an id. About 70 heap bytes an id (a map of id strings to times
// beside an order slice took 130 to 166), no pointer an id for the
// collector to trace, and view, the rewrite's copy, holds a few words a
// chunk, not the ids. The ids are spread over doneTables tables by their
// hash, each resized on its own: a resize under the Journal's lock moves
// a 256th of the slots (a single table of half a million ids took 60 to
// 190 ms to double on a loaded 2-core machine).
//
// An id done again later (a log replayed with two done lines of it) moves
// to the back with the later time: its first entry stays in its chunk,
// dead (no slot names it), until the front passes it.
//
// A doneIDs is not safe for concurrent use (the Journal's mu guards it),
// but a view of it may be read without the lock while it changes: nothing
// a view holds is written again.
type doneIDs struct {
	chunks []*doneChunk // oldest first
	head   int          // entries of chunks[0] already forgotten
	first  uint32       // position of chunks[0].ents[0]
	live   int          // ids remembered (entries a slot names)
	tables [doneTables]doneTable
	seed   maphash.Seed
}

// doneTable holds a slot per remembered id whose hash's top byte is the
// table's, by linear probing from the hash: its low 31 bits (the top bit
// set: the tag) above the entry's position; 0 is empty. Positions count
// entries mod 2^32.
type doneTable struct {
	slots []uint64
	n     int // slots in use
}

// doneChunk holds up to doneChunkLen entries and their ids' bytes.
type doneChunk struct {
	ents []doneEnt
	ids  []byte
}

// doneEnt is one done id: ids[off:off+n] of its chunk, done at at.
type doneEnt struct {
	at     int64 // unix nanoseconds
	off, n uint32
}

const (
	// doneChunkLen is the entries of a chunk (a power of two: a position
	// splits into chunk and index); doneChunkBytes the bytes of ids after
	// which a chunk takes no more (one longer id has a chunk to itself).
	doneChunkLen   = 1 << 12
	doneChunkBytes = 128 << 10
	doneTableBits  = 8 // the hash's top bits that pick a table
	doneTables     = 1 << doneTableBits
	doneTableMin   = 8
	doneSlotUsed   = 1 << 31
)

func newDoneIDs() *doneIDs { return &doneIDs{seed: maphash.MakeSeed()} }

func (d *doneIDs) len() int { return d.live }

// has reports whether id is remembered.
func (d *doneIDs) has(id string) bool {
	if d.live == 0 {
		return false
	}
	t, tag := d.table(maphash.String(d.seed, id))
	_, ok := d.find(t, id, tag)
	return ok
}

// add remembers id, done at at. An id remembered already moves to the back
// when at is later, and stays as it is otherwise.
func (d *doneIDs) add(id string, at time.Time) {
	nanos := unixNanos(at)
	t, tag := d.table(maphash.String(d.seed, id))
	if i, ok := d.find(t, id, tag); ok {
		if d.ent(uint32(t.slots[i])).at >= nanos {
			return
		}
		t.slots[i] = t.slots[i]&^math.MaxUint32 | uint64(d.append(id, nanos))
		return
	}
	if 2*(t.n+1) > len(t.slots) {
		t.resize(max(doneTableMin, 2*len(t.slots)))
	}
	pos := d.append(id, nanos)
	mask := uint32(len(t.slots) - 1)
	i := tag & mask
	for t.slots[i] != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = uint64(tag)<<32 | uint64(pos)
	t.n++
	d.live++
}

// forget drops the oldest ids done before cutoff, or after ahead, while
// more than keep are remembered. A time after ahead (the clock's now, and
// a little) was taken while the clock was ahead, then set back: the
// front's oldest id kept every later one (all of them, for as long as the
// clock had been ahead: a year ahead for a minute, a year of ids), so the
// newest keep ids alone hold it.
func (d *doneIDs) forget(keep int, cutoff, ahead time.Time) {
	limit, future := unixNanos(cutoff), unixNanos(ahead)
	for d.live > keep {
		if d.head == len(d.chunks[0].ents) {
			// The front chunk was used up while it was the only one;
			// the ids remembered are in the later ones.
			d.dropFront()
		}
		c := d.chunks[0]
		e := c.ents[d.head]
		pos := d.first + uint32(d.head)
		t, tag := d.table(maphash.Bytes(d.seed, c.ids[e.off:e.off+e.n]))
		if i, ok := t.slotOf(uint64(tag)<<32 | uint64(pos)); ok {
			if e.at > limit && e.at <= future {
				return
			}
			t.remove(i)
			d.live--
			if len(t.slots) > doneTableMin && 8*t.n < len(t.slots) {
				t.resize(len(t.slots) / 2)
			}
		}
		d.head++
		if d.head == len(c.ents) && len(d.chunks) > 1 {
			d.dropFront()
		}
	}
}

// dropFront drops the front chunk, all of whose entries are forgotten.
func (d *doneIDs) dropFront() {
	d.chunks[0] = nil
	d.chunks = d.chunks[1:]
	d.head, d.first = 0, d.first+doneChunkLen
}

// doneView is the done ids as they were when view returned, oldest first:
// safe to read without the Journal's lock. It may hold an id twice (done
// again later): replaying both lines gives the same set.
type doneView []doneChunk

// view copies the chunks' headers, not their entries.
func (d *doneIDs) view() doneView {
	v := make(doneView, len(d.chunks))
	for i, c := range d.chunks {
		v[i] = doneChunk{ents: c.ents[:len(c.ents):len(c.ents)], ids: c.ids[:len(c.ids):len(c.ids)]}
	}
	if len(v) > 0 {
		v[0].ents = v[0].ents[d.head:]
	}
	return v
}

// len is the entries of v.
func (v doneView) len() int {
	n := 0
	for _, c := range v {
		n += len(c.ents)
	}
	return n
}

// each calls fn for each id of v, oldest first. The id's bytes are shared
// with the set: fn must not keep id past its return.
func (v doneView) each(fn func(id string, at time.Time)) {
	for _, c := range v {
		for _, e := range c.ents {
			fn(unsafe.String(unsafe.SliceData(c.ids[e.off:]), e.n), time.Unix(0, e.at).UTC())
		}
	}
}

// append adds an entry at the back and returns its position.
func (d *doneIDs) append(id string, at int64) uint32 {
	if len(d.chunks) == 0 {
		d.chunks = append(d.chunks, &doneChunk{})
	}
	c := d.chunks[len(d.chunks)-1]
	if len(c.ents) == doneChunkLen || len(c.ids) > 0 && len(c.ids)+len(id) > doneChunkBytes {
		// The ids of a chunk take about what the last one's did.
		n := max(len(id), min(doneChunkBytes, len(c.ids)+len(c.ids)/16))
		c = &doneChunk{ents: make([]doneEnt, 0, doneChunkLen), ids: make([]byte, 0, n)}
		d.chunks = append(d.chunks, c)
	}
	c.ents = append(c.ents, doneEnt{at: at, off: uint32(len(c.ids)), n: uint32(len(id))})
	c.ids = append(c.ids, id...)
	return d.first + uint32(len(d.chunks)-1)*doneChunkLen + uint32(len(c.ents)-1)
}

// ent is the entry at pos.
func (d *doneIDs) ent(pos uint32) doneEnt {
	k := pos - d.first
	return d.chunks[k/doneChunkLen].ents[k%doneChunkLen]
}

// idAt is the bytes of the id at pos.
func (d *doneIDs) idAt(pos uint32) []byte {
	k := pos - d.first
	c := d.chunks[k/doneChunkLen]
	e := c.ents[k%doneChunkLen]
	return c.ids[e.off : e.off+e.n]
}

// table returns the table of an id hashed to h, and the id's tag.
func (d *doneIDs) table(h uint64) (*doneTable, uint32) {
	return &d.tables[h>>(64-doneTableBits)], uint32(h) | doneSlotUsed
}

// find returns the slot of id, whose tag is tag, in t.
func (d *doneIDs) find(t *doneTable, id string, tag uint32) (int, bool) {
	if t.n == 0 {
		return 0, false
	}
	mask := uint32(len(t.slots) - 1)
	for i := tag & mask; ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			return 0, false
		}
		if uint32(s>>32) == tag && string(d.idAt(uint32(s))) == id {
			return int(i), true
		}
	}
}

// slotOf returns the slot holding want: none when its id moved on to a
// later entry.
func (t *doneTable) slotOf(want uint64) (int, bool) {
	if t.n == 0 {
		return 0, false
	}
	mask := uint32(len(t.slots) - 1)
	for i := uint32(want>>32) & mask; ; i = (i + 1) & mask {
		switch t.slots[i] {
		case 0:
			return 0, false
		case want:
			return int(i), true
		}
	}
}

// remove empties slot i, moving back the slots after it that probed past
// it (linear probing's deletion: no tombstones).
func (t *doneTable) remove(i int) {
	mask := uint32(len(t.slots) - 1)
	hole := uint32(i)
	for j := (hole + 1) & mask; t.slots[j] != 0; j = (j + 1) & mask {
		home := uint32(t.slots[j]>>32) & mask
		// The slot at j stays when its home lies cyclically in (hole, j].
		if (j-home)&mask < (j-hole)&mask {
			continue
		}
		t.slots[hole] = t.slots[j]
		hole = j
	}
	t.slots[hole] = 0
	t.n--
}

// resize rebuilds t with n slots (a power of two) from the slots' tags,
// without reading an id.
func (t *doneTable) resize(n int) {
	old := t.slots
	t.slots = make([]uint64, n)
	mask := uint32(n - 1)
	for _, s := range old {
		if s == 0 {
			continue
		}
		i := uint32(s>>32) & mask
		for t.slots[i] != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = s
	}
}

// unixNanos is t in unix nanoseconds, clamped to what they can hold
// (years 1678 to 2262): a damaged log's time keeps its id, no longer.
func unixNanos(t time.Time) int64 {
	switch {
	case t.Before(time.Unix(0, math.MinInt64)):
		return math.MinInt64
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	}
	return t.UnixNano()
}
