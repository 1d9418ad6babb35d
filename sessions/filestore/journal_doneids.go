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
// dropped whole from the front; an open-addressing table of 8-byte slots
// finds an id. About 70 heap bytes an id (a map of id strings to times
// beside an order slice took 130 to 166), no pointer an id for the
// collector to trace, and view, the rewrite's copy, holds a few words a
// chunk, not the ids.
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
	// table holds a slot per remembered id, by linear probing from its
	// hash: the hash's low 31 bits (the top bit set) above the entry's
	// position; 0 is empty. Positions count entries mod 2^32.
	table []uint64
	seed  maphash.Seed
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
	doneTableMin   = 16
	doneSlotUsed   = 1 << 31
)

func newDoneIDs() *doneIDs { return &doneIDs{seed: maphash.MakeSeed()} }

func (d *doneIDs) len() int { return d.live }

// has reports whether id is remembered.
func (d *doneIDs) has(id string) bool {
	if d.live == 0 {
		return false
	}
	_, ok := d.find(id, d.tag(id))
	return ok
}

// add remembers id, done at at. An id remembered already moves to the back
// when at is later, and stays as it is otherwise.
func (d *doneIDs) add(id string, at time.Time) {
	nanos, tag := unixNanos(at), d.tag(id)
	if i, ok := d.find(id, tag); ok {
		if d.ent(uint32(d.table[i])).at >= nanos {
			return
		}
		d.table[i] = d.table[i]&^math.MaxUint32 | uint64(d.append(id, nanos))
		return
	}
	if 2*(d.live+1) > len(d.table) {
		d.resize(max(doneTableMin, 2*len(d.table)))
	}
	pos := d.append(id, nanos)
	mask := uint32(len(d.table) - 1)
	i := tag & mask
	for d.table[i] != 0 {
		i = (i + 1) & mask
	}
	d.table[i] = uint64(tag)<<32 | uint64(pos)
	d.live++
}

// forget drops the oldest ids done before cutoff while more than keep are
// remembered.
func (d *doneIDs) forget(keep int, cutoff time.Time) {
	limit := unixNanos(cutoff)
	for d.live > keep {
		c := d.chunks[0]
		e := c.ents[d.head]
		pos := d.first + uint32(d.head)
		if i, ok := d.slotOf(c.ids[e.off:e.off+e.n], pos); ok {
			if e.at > limit {
				return
			}
			d.remove(i)
			d.live--
		}
		d.head++
		if d.head == len(c.ents) && len(d.chunks) > 1 {
			d.chunks[0] = nil
			d.chunks = d.chunks[1:]
			d.head, d.first = 0, d.first+doneChunkLen
		}
	}
	if len(d.table) > doneTableMin && 8*d.live < len(d.table) {
		d.resize(len(d.table) / 2)
	}
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

func (d *doneIDs) tag(id string) uint32 {
	return uint32(maphash.String(d.seed, id)) | doneSlotUsed
}

// find returns the slot of id, whose tag is tag.
func (d *doneIDs) find(id string, tag uint32) (int, bool) {
	if len(d.table) == 0 {
		return 0, false
	}
	mask := uint32(len(d.table) - 1)
	for i := tag & mask; ; i = (i + 1) & mask {
		s := d.table[i]
		if s == 0 {
			return 0, false
		}
		if uint32(s>>32) == tag && string(d.idAt(uint32(s))) == id {
			return int(i), true
		}
	}
}

// slotOf returns the slot naming the entry at pos, whose id is id: none
// when the id moved on to a later entry.
func (d *doneIDs) slotOf(id []byte, pos uint32) (int, bool) {
	want := uint64(uint32(maphash.Bytes(d.seed, id))|doneSlotUsed)<<32 | uint64(pos)
	mask := uint32(len(d.table) - 1)
	for i := uint32(want>>32) & mask; ; i = (i + 1) & mask {
		switch d.table[i] {
		case 0:
			return 0, false
		case want:
			return int(i), true
		}
	}
}

// remove empties slot i, moving back the slots after it that probed past
// it (linear probing's deletion: no tombstones).
func (d *doneIDs) remove(i int) {
	mask := uint32(len(d.table) - 1)
	hole := uint32(i)
	for j := (hole + 1) & mask; d.table[j] != 0; j = (j + 1) & mask {
		home := uint32(d.table[j]>>32) & mask
		// The slot at j stays when its home lies cyclically in (hole, j].
		if (j-home)&mask < (j-hole)&mask {
			continue
		}
		d.table[hole] = d.table[j]
		hole = j
	}
	d.table[hole] = 0
}

// resize rebuilds the table with n slots (a power of two) from the slots'
// hashes, without reading an id.
func (d *doneIDs) resize(n int) {
	old := d.table
	d.table = make([]uint64, n)
	mask := uint32(n - 1)
	for _, s := range old {
		if s == 0 {
			continue
		}
		i := uint32(s>>32) & mask
		for d.table[i] != 0 {
			i = (i + 1) & mask
		}
		d.table[i] = s
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
