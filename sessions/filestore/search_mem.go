package filestore

import (
	"slices"

	"github.com/gateway/gateway/sessions/searchtext"
)

// memSegment holds the messages indexed since the last flush (the tail of
// the files backend's search index). Its methods are called with
// searchIndex.mu held.
type memSegment struct {
	rows  []sessRow
	rowOf map[string]uint32 // rowKey → index in rows
	docs  []docRec
	post  map[string]*postList
	// first is the offset of the first line this process appended to each
	// session: the catch-up at load reads a transcript only up to it.
	first map[string]int64
	// unsorted is set once a doc is older than the one before it.
	unsorted bool
}

// postList is one word's doc numbers (a pointer, so adding to it needs no
// key string once the word is known).
type postList struct{ docs []uint32 }

func newMemSegment() *memSegment {
	return &memSegment{rowOf: map[string]uint32{}, post: map[string]*postList{}, first: map[string]int64{}}
}

func (m *memSegment) row(agent, sid string) uint32 {
	var buf [96]byte // an agent id and a UUID fit: the lookup allocates nothing
	k := append(append(append(buf[:0], agent...), '/'), sid...)
	if r, ok := m.rowOf[string(k)]; ok {
		return r
	}
	r := uint32(len(m.rows))
	m.rows = append(m.rows, sessRow{agent: agent, sid: sid})
	m.rowOf[rowKey(agent, sid)] = r
	return r
}

// add indexes one message.
func (m *memSegment) add(row uint32, role uint8, ts, off int64, words *searchtext.WordList) {
	d := uint32(len(m.docs))
	if d > 0 && ts < m.docs[d-1].ts {
		m.unsorted = true
	}
	m.docs = append(m.docs, docRec{row: row, role: role, ts: ts, off: off})
	for i := range words.Len() {
		w := words.Word(i)
		pl := m.post[string(w)] // no allocation for the lookup
		if pl == nil {
			pl = &postList{}
			m.post[string(w)] = pl
		}
		pl.docs = append(pl.docs, d)
	}
}

// cover records that row's transcript is indexed up to end.
func (m *memSegment) cover(row uint32, end int64) {
	if end > m.rows[row].covered {
		m.rows[row].covered = end
	}
}

func (m *memSegment) empty() bool { return len(m.docs) == 0 && len(m.rows) == 0 }

// writer renders m as a segment (docs numbered by timestamp).
func (m *memSegment) writer() (*segmentWriter, error) {
	w := &segmentWriter{rows: m.rows, docs: slices.Clone(m.docs)}
	newID := w.sortDocs()
	terms := make([]string, 0, len(m.post))
	for t := range m.post {
		terms = append(terms, t)
	}
	slices.Sort(terms)
	var buf []uint32
	for _, t := range terms {
		buf = buf[:0]
		for _, d := range m.post[t].docs {
			buf = append(buf, newID[d])
		}
		if m.unsorted {
			slices.Sort(buf)
		}
		if err := w.addTerm([]byte(t), buf); err != nil {
			return nil, err
		}
	}
	return w, nil
}
