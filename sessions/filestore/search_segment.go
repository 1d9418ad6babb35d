package filestore

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/gateway/gateway/sessions"
	"hash/crc32"
	"slices"
	"sort"
)

// A search segment is an immutable file of the files backend's search
// index, <stateDir>/search/seg-<gen>.gsx (little-endian):
//
//	"GWSRCH1\n"  nRows u32  nDocs u32  nTerms u32  flags u32 (bit 0: docs sorted by timestamp)
//	rows         nRows × (agent len u16, agent, session id len u16, id, covered i64)
//	docs         nDocs × 24 bytes (row u32, role u8, 3 zero bytes, timestamp ms i64, line offset i64)
//	term offsets (nTerms+1) × u32 into the term bytes
//	post offsets (nTerms+1) × u64 into the postings bytes
//	term bytes   terms sorted bytewise
//	postings     per term: ascending doc numbers, uvarint deltas
//	crc32c u32 of everything before, "GWSE"
//
// A row's covered is the transcript offset up to which that session's
// messages are indexed (in this or older segments). A doc is one message
// entry: its session row, role, timestamp and the offset of its line in the
// transcript (read for the snippet). No text is stored. The writer numbers
// docs by timestamp, so a search walking a segment from its end can stop
// at the first doc older than the hits it holds.

const (
	segMagic    = "GWSRCH1\n"
	segEndMagic = "GWSE"
	segHeader   = 24
	docSize     = 24
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errSegment marks a damaged segment file: the index is rebuilt.
var errSegment = errors.New("damaged search segment")

// sessRow is one session of a segment.
type sessRow struct {
	agent, sid string
	covered    int64
}

// rowKey identifies a session across agents.
func rowKey(agent, sid string) string { return agent + "/" + sid }

// docRec is one indexed message.
type docRec struct {
	row  uint32
	role uint8
	ts   int64 // unix ms
	off  int64 // line offset in the transcript
}

var roleNames = [...]string{"", sessions.RoleUser, sessions.RoleAssistant, sessions.RoleToolResult}

func roleCode(role string) uint8 {
	for i, r := range roleNames {
		if i > 0 && r == role {
			return uint8(i)
		}
	}
	return 0
}

func roleName(c uint8) string {
	if int(c) < len(roleNames) {
		return roleNames[c]
	}
	return ""
}

// segment is an open segment file (memory-mapped where the OS allows).
type segment struct {
	gen   uint64
	path  string
	data  []byte
	unmap func() error
	rows  []sessRow

	docs, termOffs, postOffs, terms, posts []byte
	nDocs, nTerms                          int
	sorted                                 bool // docs ascend by timestamp
}

// openSegment maps and verifies a segment file.
func openSegment(path string, gen uint64) (*segment, error) {
	data, unmap, err := mapFile(path)
	if err != nil {
		return nil, fmt.Errorf("search: open segment: %w", err)
	}
	s := &segment{gen: gen, path: path, data: data, unmap: unmap}
	if err := s.parse(); err != nil {
		_ = unmap()
		return nil, fmt.Errorf("search: open segment %s: %w: %w", path, errSegment, err)
	}
	return s, nil
}

func (s *segment) close() error {
	if s.unmap == nil {
		return nil
	}
	err := s.unmap()
	s.unmap, s.data = nil, nil
	return err
}

func (s *segment) parse() error {
	d := s.data
	if len(d) < segHeader+8 || string(d[:8]) != segMagic || string(d[len(d)-4:]) != segEndMagic {
		return errors.New("bad magic")
	}
	body := d[:len(d)-8]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(d[len(d)-8:]) {
		return errors.New("checksum mismatch")
	}
	nRows := int(binary.LittleEndian.Uint32(d[8:]))
	s.nDocs = int(binary.LittleEndian.Uint32(d[12:]))
	s.nTerms = int(binary.LittleEndian.Uint32(d[16:]))
	s.sorted = binary.LittleEndian.Uint32(d[20:])&1 != 0
	p := segHeader
	str := func() (string, bool) {
		if p+2 > len(body) {
			return "", false
		}
		n := int(binary.LittleEndian.Uint16(body[p:]))
		p += 2
		if p+n > len(body) {
			return "", false
		}
		v := string(body[p : p+n])
		p += n
		return v, true
	}
	s.rows = make([]sessRow, 0, nRows)
	for range nRows {
		a, ok1 := str()
		id, ok2 := str()
		if !ok1 || !ok2 || p+8 > len(body) {
			return errors.New("truncated rows")
		}
		s.rows = append(s.rows, sessRow{agent: a, sid: id, covered: int64(binary.LittleEndian.Uint64(body[p:]))})
		p += 8
	}
	take := func(n int) ([]byte, bool) {
		if n < 0 || p+n > len(body) {
			return nil, false
		}
		b := body[p : p+n]
		p += n
		return b, true
	}
	var ok [4]bool
	s.docs, ok[0] = take(s.nDocs * docSize)
	s.termOffs, ok[1] = take((s.nTerms + 1) * 4)
	s.postOffs, ok[2] = take((s.nTerms + 1) * 8)
	if !ok[0] || !ok[1] || !ok[2] {
		return errors.New("truncated tables")
	}
	termLen := int(binary.LittleEndian.Uint32(s.termOffs[s.nTerms*4:]))
	s.terms, ok[3] = take(termLen)
	if !ok[3] {
		return errors.New("truncated terms")
	}
	postLen := int(binary.LittleEndian.Uint64(s.postOffs[s.nTerms*8:]))
	if s.posts, ok[0] = take(postLen); !ok[0] || p != len(body) {
		return errors.New("truncated postings")
	}
	for i := range s.nDocs {
		if s.doc(uint32(i)).row >= uint32(len(s.rows)) {
			return fmt.Errorf("doc %d: row out of range", i)
		}
	}
	return nil
}

func (s *segment) doc(i uint32) docRec {
	b := s.docs[int(i)*docSize:]
	return docRec{
		row: binary.LittleEndian.Uint32(b), role: b[4],
		ts: int64(binary.LittleEndian.Uint64(b[8:])), off: int64(binary.LittleEndian.Uint64(b[16:])),
	}
}

func (s *segment) term(i int) []byte {
	lo := binary.LittleEndian.Uint32(s.termOffs[i*4:])
	hi := binary.LittleEndian.Uint32(s.termOffs[i*4+4:])
	if lo > hi || int(hi) > len(s.terms) {
		return nil
	}
	return s.terms[lo:hi]
}

func (s *segment) postingsAt(i int) []byte {
	lo := binary.LittleEndian.Uint64(s.postOffs[i*8:])
	hi := binary.LittleEndian.Uint64(s.postOffs[i*8+8:])
	if lo > hi || hi > uint64(len(s.posts)) {
		return nil
	}
	return s.posts[lo:hi]
}

// encodedPostings returns term's postings as stored (nil if absent).
func (s *segment) encodedPostings(term string) []byte {
	t := []byte(term)
	i := sort.Search(s.nTerms, func(i int) bool { return bytes.Compare(s.term(i), t) >= 0 })
	if i >= s.nTerms || !bytes.Equal(s.term(i), t) {
		return nil
	}
	return s.postingsAt(i)
}

// intersectEncoded keeps the numbers of docs (ascending) that the encoded
// list enc holds, in place, without decoding enc into memory.
func intersectEncoded(docs []uint32, enc []byte) []uint32 {
	out := docs[:0]
	var cur uint64
	have := false
	next := func() bool {
		v, n := binary.Uvarint(enc)
		if n <= 0 {
			return false
		}
		enc = enc[n:]
		cur += v
		return true
	}
	have = next()
	for _, d := range docs {
		for have && uint32(cur) < d {
			have = next()
		}
		if !have {
			break
		}
		if uint32(cur) == d {
			out = append(out, d)
		}
	}
	return out
}

func decodePostings(b []byte, out []uint32) []uint32 {
	var last uint64
	for len(b) > 0 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			break
		}
		b = b[n:]
		last += v
		out = append(out, uint32(last))
	}
	return out
}

// segmentWriter builds a segment file in memory.
type segmentWriter struct {
	rows  []sessRow
	docs  []docRec
	terms []byte
	posts []byte
	tOffs []uint32
	pOffs []uint64
	last  []byte
}

// sortDocs orders w.docs by timestamp (stable) and returns each old doc
// number's new one; call it before adding terms, whose postings must be
// renumbered with it.
func (w *segmentWriter) sortDocs() []uint32 {
	perm := make([]uint32, len(w.docs))
	for i := range perm {
		perm[i] = uint32(i)
	}
	slices.SortStableFunc(perm, func(a, b uint32) int { return cmp.Compare(w.docs[a].ts, w.docs[b].ts) })
	sorted := make([]docRec, len(w.docs))
	newID := make([]uint32, len(w.docs))
	for n, old := range perm {
		sorted[n] = w.docs[old]
		newID[old] = uint32(n)
	}
	w.docs = sorted
	return newID
}

// addTerm appends a term's postings; terms must come in ascending order.
func (w *segmentWriter) addTerm(term []byte, docs []uint32) error {
	if len(w.tOffs) > 0 && bytes.Compare(term, w.last) <= 0 {
		return fmt.Errorf("search: write segment: term %q out of order", term)
	}
	w.last = append(w.last[:0], term...)
	w.tOffs = append(w.tOffs, uint32(len(w.terms)))
	w.pOffs = append(w.pOffs, uint64(len(w.posts)))
	w.terms = append(w.terms, term...)
	var prev uint32
	for i, d := range docs {
		if i > 0 && d <= prev {
			return fmt.Errorf("search: write segment: postings of %q not ascending", term)
		}
		w.posts = binary.AppendUvarint(w.posts, uint64(d-prev))
		prev = d
	}
	return nil
}

// bytes renders the file.
func (w *segmentWriter) bytes() ([]byte, error) {
	if uint64(len(w.terms)) > 1<<32-1 {
		return nil, errors.New("search: write segment: too many terms")
	}
	n := segHeader + len(w.docs)*docSize + (len(w.tOffs)+1)*12 + len(w.terms) + len(w.posts) + 8
	b := make([]byte, 0, n+len(w.rows)*60)
	b = append(b, segMagic...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(w.rows)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(w.docs)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(w.tOffs)))
	b = binary.LittleEndian.AppendUint32(b, 1) // sorted: see sortDocs
	for _, r := range w.rows {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(r.agent)))
		b = append(b, r.agent...)
		b = binary.LittleEndian.AppendUint16(b, uint16(len(r.sid)))
		b = append(b, r.sid...)
		b = binary.LittleEndian.AppendUint64(b, uint64(r.covered))
	}
	for _, d := range w.docs {
		b = binary.LittleEndian.AppendUint32(b, d.row)
		b = append(b, d.role, 0, 0, 0)
		b = binary.LittleEndian.AppendUint64(b, uint64(d.ts))
		b = binary.LittleEndian.AppendUint64(b, uint64(d.off))
	}
	for _, o := range append(slices.Clip(w.tOffs), uint32(len(w.terms))) {
		b = binary.LittleEndian.AppendUint32(b, o)
	}
	for _, o := range append(slices.Clip(w.pOffs), uint64(len(w.posts))) {
		b = binary.LittleEndian.AppendUint64(b, o)
	}
	b = append(b, w.terms...)
	b = append(b, w.posts...)
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	return append(b, segEndMagic...), nil
}

// writeSegmentFile writes data to path durably (writeFileAtomic: a
// temporary file, fsync, rename, directory fsync), so a crash leaves the
// whole segment or none.
func writeSegmentFile(path string, data []byte) error {
	if err := writeFileAtomic(path, data); err != nil {
		return fmt.Errorf("search: write segment: %w", err)
	}
	return nil
}
