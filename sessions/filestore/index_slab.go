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
// then hands them, with keys cut from one string, to a goroutine that
// puts them into the map: parsing the lines and filling the map (hashing,
// probing, the slots' times) take about as long each, and on two cores the
// load takes about half as long as one goroutine doing both.
type keyBatch struct {
	keys []byte
	ents []keyedSlot
	work chan keyChunk    // chunks for the inserter, in the order read
	free chan []keyedSlot // ents slices the inserter is done with
	done chan error       // the inserter's end: the first entry it refused
}

// keyedSlot is a collected entry: its compact form and where its key is
// in keys.
type keyedSlot struct {
	start, end int
	c          compactEntry
}

// keyChunk is a batch of entries handed to the inserter.
type keyChunk struct {
	keys string
	ents []keyedSlot
}

// newKeyBatch starts the inserter of slots (entries in the given repair
// state); close must be called.
func newKeyBatch(slots map[string]slot, repair uint8) *keyBatch {
	b := &keyBatch{
		keys: make([]byte, 0, slabSize),
		work: make(chan keyChunk, 2), free: make(chan []keyedSlot, 3), done: make(chan error, 1),
	}
	go func() {
		var first error
		for ch := range b.work {
			for _, e := range ch.ents {
				if first != nil {
					break
				}
				k := ch.keys[e.start:e.end]
				sl := newSlot(e.c)
				sl.repair = repair
				if v, ok := sl.c.field(fieldSessionKey); !ok || len(v) == 0 || v[0] == 0 {
					// An entry written without its key (the reference
					// system's) takes the map's, as the general decoder
					// gives it (FuzzIndexRead).
					var err error
					if sl, err = keySlot(k, sl); err != nil {
						first = err
						break
					}
				}
				slots[k] = sl
			}
			select {
			case b.free <- ch.ents[:0]:
			default:
			}
		}
		b.done <- first
	}()
	return b
}

// add collects the entry of key k (a view, copied here).
func (b *keyBatch) add(k []byte, c compactEntry) {
	if len(b.keys)+len(k) > cap(b.keys) {
		b.flush()
	}
	start := len(b.keys)
	b.keys = append(b.keys, k...)
	b.ents = append(b.ents, keyedSlot{start, len(b.keys), c})
}

// flush hands the collected entries to the inserter (a key that comes
// twice keeps its last entry, as a map assignment would).
func (b *keyBatch) flush() {
	if len(b.ents) == 0 {
		return
	}
	b.work <- keyChunk{string(b.keys), b.ents}
	b.keys = b.keys[:0]
	select {
	case b.ents = <-b.free:
	default:
		b.ents = make([]keyedSlot, 0, cap(b.ents))
	}
}

// close hands over what is left and waits for the inserter: the map holds
// every entry added when it returns, and nothing writes it any more. The
// error is that of an entry the inserter refused (its key could not be
// copied into it).
func (b *keyBatch) close() error {
	b.flush()
	close(b.work)
	return <-b.done
}
