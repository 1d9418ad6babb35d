package filestore

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"
	"unicode/utf8"

	"github.com/gateway/gateway/sessions"
)

// Reading the index. A start reads sessions.json once before its first
// reply, so this is on the path to it: 100,000 sessions must load in a
// fraction of a second and a million in a few seconds.
//
// The file as encodeLocked writes it (one entry per line, each exactly as
// json.Marshal writes it) is read line by line without encoding/json:
// compactOf turns each entry into its compact form directly. Anything else
// in it — a file written by hand or by another tool, an entry with other
// spacing, invalid JSON — is read by the general decoder, which is what
// reads every file the fast path does not, and whose errors name the entry
// and what is wrong with it. The two agree on every file the fast path
// reads (FuzzIndexRead).

// slot is one cached entry. Beside the entry it holds what scans of every
// entry read (Recent, maintenance), so that they decode nothing. Slots are
// held by value in the map (no object each); the session id is read from
// the entry when asked for (no string each).
type slot struct {
	c       compactEntry // the entry (entry_compact.go)
	updated int64        // its updatedAt, Unix ns (saturated: see unixNano)
	active  int64        // its lastInteractionAt, Unix ns (saturated)
	repair  uint8        // its counter repair state (repair.go)
}

func newSlot(c compactEntry) slot {
	sl := slot{c: c}
	last := max(fieldUpdatedAt, fieldLastInteractionAt)
	fc := c.cursor()
	for j, v, ok := fc.next(); ok && j <= last; j, v, ok = fc.next() {
		switch j {
		case fieldUpdatedAt:
			sl.updated = unixNano(timeValue(v))
		case fieldLastInteractionAt:
			sl.active = unixNano(timeValue(v))
		}
	}
	return sl
}

// entry decodes the slot's entry.
func (sl slot) entry() sessions.Entry { return sl.c.entry() }

// id is the entry's session id.
func (sl slot) id() string { return sl.c.str(fieldSessionID) }

// isSession says whether the entry's session id is id (without a copy).
func (sl slot) isSession(id string) bool {
	v, _ := sl.c.field(fieldSessionID)
	n, w := binary.Uvarint(v)
	if s := v[w : w+int(n)]; bytes.IndexByte(s, '\\') < 0 {
		return string(s) == id
	}
	return sl.id() == id
}

// sameSession says whether two entries have the same session id.
func (sl slot) sameSession(o slot) bool {
	a, _ := sl.c.field(fieldSessionID)
	b, _ := o.c.field(fieldSessionID)
	return bytes.Equal(a, b) // one id, one encoding
}

// updatedAt and lastInteractionAt are the entry's times (as instants).
func (sl slot) updatedAt() time.Time { return sl.timeAt(sl.updated, fieldUpdatedAt) }
func (sl slot) lastInteractionAt() time.Time {
	return sl.timeAt(sl.active, fieldLastInteractionAt)
}

func (sl slot) timeAt(ns int64, field int) time.Time {
	if ns == math.MinInt64 || ns == math.MaxInt64 {
		return sl.c.time(field) // out of int64 nanoseconds' range: decode it
	}
	return time.Unix(0, ns)
}

// unixNano is t in Unix nanoseconds, saturated to the int64 range (years
// 1678 to 2262) where t.UnixNano is undefined: a zero time sorts first.
func unixNano(t time.Time) int64 {
	const maxSec = math.MaxInt64 / int64(time.Second)
	switch sec := t.Unix(); {
	case sec < -maxSec:
		return math.MinInt64
	case sec >= maxSec:
		return math.MaxInt64
	}
	return t.UnixNano()
}

// readIndex reads the index file f, of size bytes, into a new map of slots
// in the given repair state.
func readIndex(f io.ReadSeeker, size int64, repair uint8) (map[string]slot, error) {
	r := bufio.NewReaderSize(f, 256<<10)
	slots := make(map[string]slot, indexEntries(r, size))
	ok, err := scanIndex(r, slots, repair)
	if err != nil {
		return slots, err
	}
	if ok {
		return slots, nil
	}
	clear(slots)
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	r.Reset(f)
	err = decodeEntries(r, slots, repair, false)
	if err != nil && !errors.Is(err, ErrSeed000Index) {
		// Perhaps an index with epoch-millisecond times (the reference
		// system's JSON-era format): read it again, leniently.
		if _, serr := f.Seek(0, io.SeekStart); serr == nil {
			clear(slots)
			r.Reset(f)
			if lerr := decodeEntries(r, slots, repair, true); lerr == nil {
				err = nil
			}
		}
	}
	return slots, err
}

// indexEntries estimates how many entries an index of size bytes holds
// from the lines at its start, so that the map is made at its size (not
// grown through every size on the way, nor much larger). Only lines that
// can be entry lines as encodeLocked writes them count (starting with a
// quote and at least minEntryLine long): a file of another layout
// (pretty-printed, or many short lines) gets no estimate, and no map far
// larger than its entries, whatever its size.
func indexEntries(r *bufio.Reader, size int64) int {
	head, _ := r.Peek(int(min(size, 64<<10)))
	rest, ok := bytes.CutPrefix(head, []byte("{\n"))
	if !ok {
		return 0
	}
	lines := 0
	for {
		line, after, found := bytes.Cut(rest, []byte("\n"))
		if !found {
			break
		}
		if len(line) >= minEntryLine && line[0] == '"' {
			lines++
		}
		rest = after
	}
	if lines < 1 {
		return 0
	}
	// Each counted line is at least minEntryLine long: the estimate is at
	// most about size/minEntryLine.
	return int(min(size*int64(lines)/int64(len(head))*21/20, 1<<24))
}

// minEntryLine is the shortest entry line encodeLocked writes: an empty
// key and a zero entry (every field without omitempty written).
var minEntryLine = func() int {
	b, err := json.Marshal(&sessions.Entry{})
	if err != nil {
		panic(err)
	}
	return len(`"": `) + len(b)
}()

// scanIndex reads the index as encodeLocked writes it: "{", then one
// `"key": entry` line each (a comma after all but the last), then "}".
// ok is false when the file is not so, or has a line longer than r's
// buffer (slots then hold part of it).
func scanIndex(r *bufio.Reader, slots map[string]slot, repair uint8) (ok bool, err error) {
	batch := newKeyBatch(slots, repair)
	ok, err = scanLines(r, batch)
	// Whatever was collected is in the map on every return: the caller
	// sees what was read (the general decoder clears it to read again).
	kerr := batch.close()
	if err != nil || !ok {
		return false, err
	}
	if kerr != nil {
		return false, kerr
	}
	return true, nil
}

// scanLines is scanIndex's reading of the lines, each entry handed to
// batch.
func scanLines(r *bufio.Reader, batch *keyBatch) (ok bool, err error) {
	var (
		scratch = make([]byte, 0, 1024)
		more    = false // the previous entry line ended with a comma
		entries entrySlab
	)
	for n := 0; ; n++ {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// Not a line of an index as written (an entry is well under a
			// KiB): perhaps the whole file on one line. Read no further.
			return false, nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return false, err
		}
		switch {
		case n == 0:
			if string(line) != "{\n" {
				return false, nil
			}
		case string(line) == "}\n" || (string(line) == "}" && err != nil):
			if more {
				return false, nil
			}
			_, err := r.ReadByte()
			return errors.Is(err, io.EOF), nil
		default:
			if err != nil || (n > 1 && !more) {
				return false, nil // cut short, or two entries without a comma
			}
			line = line[:len(line)-1]
			line, more = bytes.CutSuffix(line, []byte(","))
			k, e, ok := splitIndexLineBytes(line)
			if !ok {
				return false, nil
			}
			var c compactEntry
			if body, ok := compactBody(scratch, e); ok {
				c = entries.copyOf(body)
			} else {
				d, err := decodeEntry(e, false)
				if err != nil {
					return false, nil
				}
				if c, err = packEntry(&d); err != nil {
					return false, err
				}
			}
			batch.add(k, c)
		}
		if err != nil {
			return false, nil
		}
	}
}

// splitIndexLineBytes is splitIndexLine with the key as bytes: a view of
// line when written without escapes.
func splitIndexLineBytes(line []byte) (k, e []byte, ok bool) {
	k, n, ok := jsonKeyBytes(line)
	if !ok || !bytes.HasPrefix(line[n:], []byte(": ")) {
		return nil, nil, false
	}
	return k, line[n+2:], true
}

// jsonKeyBytes is jsonKey without a copy of a key written plain.
func jsonKeyBytes(b []byte) (k []byte, n int, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return nil, 0, false
	}
	i := 1
	for ; i < len(b) && b[i] != '"'; i++ {
		if b[i] == '\\' || b[i] < 0x20 || b[i] >= utf8.RuneSelf {
			ks, n, ok := jsonKey(b)
			return []byte(ks), n, ok
		}
	}
	if i >= len(b) {
		return nil, 0, false
	}
	return b[1:i], i + 1, true
}

// jsonKey reads the JSON string at the start of b: its value and length.
func jsonKey(b []byte) (k string, n int, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return "", 0, false
	}
	plain := true
	i := 1
	for ; i < len(b) && b[i] != '"'; i++ {
		switch {
		case b[i] == '\\':
			plain = false
			i++
		case b[i] < 0x20 || b[i] >= utf8.RuneSelf:
			plain = false
		}
	}
	if i >= len(b) {
		return "", 0, false
	}
	if plain {
		return string(b[1:i]), i + 1, true
	}
	if json.Unmarshal(b[:i+1], &k) != nil {
		return "", 0, false
	}
	return k, i + 1, true
}

// decodeEntries streams the index object into slots, one entry at a time
// (no copy of the file or of the whole map in memory); errors name the
// entry. It reads any JSON object of entries.
func decodeEntries(r io.Reader, slots map[string]slot, repair uint8, lenient bool) error {
	dec := json.NewDecoder(r)
	tok, err := dec.Token()
	if errors.Is(err, io.EOF) {
		return nil // an empty file is an empty index
	}
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("not a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		k, ok := tok.(string)
		if !ok {
			return fmt.Errorf("unexpected %v", tok)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("entry %q: %w", sessions.Clip(k), err)
		}
		if k == "sessions" && isSeed000(raw) {
			return ErrSeed000Index
		}
		e, err := decodeEntry(raw, lenient)
		if err != nil {
			return fmt.Errorf("entry %q: %w", sessions.Clip(k), err)
		}
		c, err := packEntry(&e)
		if err != nil {
			return fmt.Errorf("entry %q: %w", sessions.Clip(k), err)
		}
		sl := newSlot(c)
		sl.repair = repair
		if slots[k], err = keySlot(k, sl); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return err
	}
	return nil
}
