package filestore

// Loading the index allocates in slabs. A start reads every entry of
// sessions.json (a million at the largest sizes we promise), and one
// allocation for each entry's compact form and one for its key made the
// load as much work for the allocator and the garbage collector as for
// the parsing: they are copied into large chunks instead (no pointers
// inside, so the collector does not look into them), and the keys of many
// entries share one string. An entry or key replaced later is allocated on
// its own as before; a chunk is freed once nothing in it is used, so at
// most what the load allocated is held longer.

// slabSize is the size of the chunks a load copies entries and keys into.
const slabSize = 256 << 10

// entrySlab hands out the compact entries of a load from shared chunks.
type entrySlab struct{ buf []byte }

// copyOf returns a copy of b in the current chunk, with no spare capacity
// (an append to it allocates, never writes into its neighbour).
func (a *entrySlab) copyOf(b []byte) compactEntry {
	if cap(a.buf)-len(a.buf) < len(b) {
		a.buf = make([]byte, 0, max(slabSize, len(b)))
	}
	start := len(a.buf)
	a.buf = append(a.buf, b...)
	return compactEntry(a.buf[start:len(a.buf):len(a.buf)])
}

// keyBatch collects the entries a load read until their keys fill a chunk,
// then puts them into the map with keys cut from one string.
type keyBatch struct {
	slots map[string]slot
	keys  []byte
	ents  []keyedSlot
}

// keyedSlot is a collected entry: its slot and where its key is in keys.
type keyedSlot struct {
	start, end int
	sl         slot
}

func newKeyBatch(slots map[string]slot) *keyBatch {
	return &keyBatch{slots: slots, keys: make([]byte, 0, slabSize)}
}

// add collects the entry of key k (a view, copied here).
func (b *keyBatch) add(k []byte, sl slot) {
	if len(b.keys)+len(k) > cap(b.keys) {
		b.flush()
	}
	start := len(b.keys)
	b.keys = append(b.keys, k...)
	b.ents = append(b.ents, keyedSlot{start, len(b.keys), sl})
}

// flush puts the collected entries into the map, in the order read (a
// key that comes twice keeps its last entry, as a map assignment would).
func (b *keyBatch) flush() {
	if len(b.ents) == 0 {
		return
	}
	all := string(b.keys)
	for _, e := range b.ents {
		b.slots[all[e.start:e.end]] = e.sl
	}
	b.keys, b.ents = b.keys[:0], b.ents[:0]
}
