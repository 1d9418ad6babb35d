package filestore

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/searchtext"
	"github.com/gateway/gateway/sessions/transcript"
)

// Search implements Searcher for the files backend: every word must occur
// in the message; hits are the newest messages (by their timestamp) of
// the current sessions that pass the filters.
func (x *searchIndex) Search(ctx context.Context, q sessions.SearchQuery) ([]sessions.SearchHit, error) {
	q, err := q.Normalize()
	if err != nil {
		return nil, err
	}
	if err := x.wait(ctx); err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	words := searchtext.Tokens(q.Text)
	allowed, err := x.allowedSessions(q)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	if len(allowed) == 0 {
		return []sessions.SearchHit{}, nil
	}
	since := int64(math.MinInt64)
	if !q.Since.IsZero() {
		since = q.Since.UnixMilli()
	}
	// A few spare candidates replace hits whose line cannot be read.
	top := &topHits{k: q.Limit + 4}

	x.segMu.RLock()
	x.mu.Lock()
	dropped := cloneDropped(x.dropped)
	tail := x.tail.snapshot(words)
	x.mu.Unlock()
	srcs := make([]searchSource, 0, len(x.segs)+len(x.frozen)+1)
	for _, s := range x.segs {
		srcs = append(srcs, segSource(s))
	}
	for _, f := range x.frozen {
		srcs = append(srcs, f.snapshot(words))
	}
	srcs = append(srcs, tail)
	keys := make([][]string, len(srcs))
	for i := len(srcs) - 1; i >= 0; i-- { // newest first: older sources stop sooner
		src := srcs[i]
		if err := ctx.Err(); err != nil {
			x.segMu.RUnlock()
			return nil, err
		}
		keys[i] = src.collect(i, words, allowed, dropped, since, top)
	}
	x.segMu.RUnlock() // rows are heap copies: still readable

	cands := top.sorted()
	hits := make([]sessions.SearchHit, 0, min(len(cands), q.Limit))
	for _, c := range cands {
		if len(hits) == q.Limit {
			break
		}
		row := srcs[c.src].rows[c.row]
		if h, ok := x.hitOf(c, row.agent, row.sid, keys[c.src][c.row], words); ok {
			hits = append(hits, h)
		}
	}
	return hits, nil
}

// allowedSessions maps agent → session id → session key for each
// searchable session (current, of the query's agents, in its room).
func (x *searchIndex) allowedSessions(q sessions.SearchQuery) (map[string]map[string]string, error) {
	match, err := sessions.RoomMatcher(q.Room)
	if err != nil {
		return nil, err
	}
	agents, err := x.m.Agents()
	if err != nil {
		return nil, err
	}
	if len(q.Agents) > 0 {
		agents = slices.DeleteFunc(agents, func(a string) bool { return !slices.Contains(q.Agents, a) })
	}
	out := map[string]map[string]string{}
	for _, a := range agents {
		st, err := x.m.Store(a)
		if err != nil {
			return nil, err
		}
		cur, err := st.currentSessions()
		if err != nil {
			return nil, err
		}
		if q.Room != "" {
			for sid, key := range cur {
				if !match(key) {
					delete(cur, sid)
				}
			}
		}
		if len(cur) > 0 {
			out[a] = cur
		}
	}
	return out, nil
}

// searchSource is a segment or an in-memory tail.
type searchSource struct {
	gen    uint64 // math.MaxUint64 for memory
	rows   []sessRow
	seg    *segment            // nil for memory
	docs   []docRec            // memory
	post   map[string][]uint32 // memory: the query's words
	sorted bool                // docs ascend by timestamp
}

func segSource(s *segment) searchSource {
	return searchSource{gen: s.gen, rows: s.rows, seg: s, sorted: s.sorted}
}

// snapshot captures m for a search: its slices only grow, so what they
// hold now can be read after mu is released. Called with mu held.
func (m *memSegment) snapshot(words []string) searchSource {
	post := make(map[string][]uint32, len(words))
	for _, w := range words {
		if pl := m.post[w]; pl != nil {
			post[w] = pl.docs[:len(pl.docs):len(pl.docs)]
		}
	}
	return searchSource{
		gen:    math.MaxUint64,
		rows:   m.rows[:len(m.rows):len(m.rows)],
		docs:   m.docs[:len(m.docs):len(m.docs)],
		post:   post,
		sorted: !m.unsorted,
	}
}

// matches returns the ascending numbers of the docs holding every word.
func (src searchSource) matches(words []string) []uint32 {
	if src.seg == nil {
		lists := make([][]uint32, 0, len(words))
		for _, w := range words {
			p := src.post[w]
			if len(p) == 0 {
				return nil
			}
			lists = append(lists, p)
		}
		slices.SortFunc(lists, func(a, b []uint32) int { return len(a) - len(b) })
		docs := slices.Clone(lists[0])
		for _, l := range lists[1:] {
			docs = intersect(docs, l)
		}
		return docs
	}
	encs := make([][]byte, 0, len(words))
	for _, w := range words {
		e := src.seg.encodedPostings(w)
		if len(e) == 0 {
			return nil
		}
		encs = append(encs, e)
	}
	// The shortest list first: the rest are walked, never decoded whole.
	slices.SortFunc(encs, func(a, b []byte) int { return len(a) - len(b) })
	docs := decodePostings(encs[0], nil)
	for _, e := range encs[1:] {
		if len(docs) == 0 {
			break
		}
		docs = intersectEncoded(docs, e)
	}
	return docs
}

func (src searchSource) doc(i uint32) docRec {
	if src.seg != nil {
		return src.seg.doc(i)
	}
	return src.docs[i]
}

// candidate is a matching message before its snippet is read; agent,
// session and key are resolved only for the hits kept.
type candidate struct {
	ts, off int64
	src     int32
	doc     uint32
	row     uint32
	role    uint8
}

func (a candidate) newer(b candidate) bool {
	if a.ts != b.ts {
		return a.ts > b.ts
	}
	if a.src != b.src {
		return a.src > b.src
	}
	return a.doc > b.doc
}

// collect adds src's matches to top and returns the session key of each
// of its rows ("" for a row not searched). Docs are visited newest first
// (append order), so once top is full most are refused by one comparison.
func (src searchSource) collect(i int, words []string, allowed map[string]map[string]string, dropped map[string]uint64, since int64, top *topHits) []string {
	docs := src.matches(words)
	if len(docs) == 0 {
		return nil
	}
	keys := make([]string, len(src.rows))
	for r, row := range src.rows {
		if len(dropped) > 0 {
			if g, ok := dropped[rowKey(row.agent, row.sid)]; ok && src.gen <= g {
				continue
			}
		}
		keys[r] = allowed[row.agent][row.sid]
	}
	for j := len(docs) - 1; j >= 0; j-- {
		d := docs[j]
		rec := src.doc(d)
		c := candidate{ts: rec.ts, off: rec.off, src: int32(i), doc: d, row: rec.row, role: rec.role}
		if rec.ts < since || (len(top.items) == top.k && !c.newer(top.items[0])) {
			if src.sorted {
				break // every doc left is older
			}
			continue
		}
		if int(rec.row) >= len(keys) {
			continue
		}
		if keys[rec.row] == "" {
			continue
		}
		top.offer(c)
	}
	return keys
}

// intersect returns the numbers in both ascending lists (a new slice).
func intersect(a, b []uint32) []uint32 {
	out := make([]uint32, 0, min(len(a), len(b)))
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}

// topHits keeps the k newest candidates (a min-heap on newer).
type topHits struct {
	k     int
	items []candidate
}

func (h *topHits) Len() int           { return len(h.items) }
func (h *topHits) Less(i, j int) bool { return h.items[j].newer(h.items[i]) }
func (h *topHits) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *topHits) Push(v any)         { h.items = append(h.items, v.(candidate)) }
func (h *topHits) Pop() any {
	v := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return v
}

func (h *topHits) offer(c candidate) {
	if len(h.items) < h.k {
		heap.Push(h, c)
		return
	}
	if c.newer(h.items[0]) {
		h.items[0] = c
		heap.Fix(h, 0)
	}
}

// sorted returns the candidates newest first.
func (h *topHits) sorted() []candidate {
	out := slices.Clone(h.items)
	slices.SortFunc(out, func(a, b candidate) int {
		if a.newer(b) {
			return -1
		}
		if b.newer(a) {
			return 1
		}
		return 0
	})
	return out
}

// hitOf reads c's transcript line for its entry id and snippet; false if
// the line is no longer the message indexed.
func (x *searchIndex) hitOf(c candidate, agent, sid, key string, words []string) (sessions.SearchHit, bool) {
	dir, err := agentSessionsDir(x.m.opts.StateDir, agent)
	if err != nil {
		return sessions.SearchHit{}, false
	}
	path, err := transcriptPath(dir, sid)
	if err != nil {
		return sessions.SearchHit{}, false
	}
	f, err := os.Open(path)
	if err != nil {
		return sessions.SearchHit{}, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || c.off >= fi.Size() {
		return sessions.SearchHit{}, false
	}
	line, err := transcript.ReadLineAt(f, c.off, fi.Size())
	if err != nil {
		return sessions.SearchHit{}, false
	}
	n, err := transcript.ParseEntry(line, c.off)
	if err != nil || n == nil || !n.IsMessage || n.Msg == nil {
		return sessions.SearchHit{}, false
	}
	return sessions.SearchHit{
		Agent: agent, SessionKey: key, SessionID: sid, EntryID: n.ID, Role: roleName(c.role),
		At: time.UnixMilli(c.ts).UTC(), Snippet: searchtext.Snippet(searchText(*n.Msg), words),
	}, true
}

// searchText is the text of m that search indexes (user and assistant
// messages): its text blocks, joined by newlines.
func searchText(m sessions.Message) string {
	var b strings.Builder
	for _, c := range m.Content {
		if c.Type == sessions.BlockText && c.Text != "" {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(c.Text)
		}
	}
	return b.String()
}
