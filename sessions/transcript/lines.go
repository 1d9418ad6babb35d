package transcript

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
)

// Reading JSONL lines of any length, and the prefix scan that Stats and
// id uniqueness need without decoding messages.

// ReadLine appends one line (with its '\n' if any) to buf; no length limit.
func ReadLine(r *bufio.Reader, buf []byte) ([]byte, error) {
	for {
		frag, err := r.ReadSlice('\n')
		buf = append(buf, frag...)
		if err != bufio.ErrBufferFull {
			return buf, err
		}
	}
}

// ReadLineAt reads the line starting at off.
func ReadLineAt(f io.ReaderAt, off, size int64) ([]byte, error) {
	r := bufio.NewReaderSize(io.NewSectionReader(f, off, size-off), 4<<10)
	b, err := ReadLine(r, nil)
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("transcript: read: %w", err)
	}
	return b, nil
}

// lastNewline returns the offset of the last '\n' in [from-1, size); the
// header's own '\n' at from-1 guarantees one.
func lastNewline(f io.ReaderAt, from, size int64) (int64, error) {
	hi := size
	for hi > from-1 {
		lo := max(from-1, hi-firstBlock)
		buf := make([]byte, hi-lo)
		if _, err := f.ReadAt(buf, lo); err != nil {
			return 0, fmt.Errorf("transcript: read: %w", err)
		}
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			return lo + int64(i), nil
		}
		hi = lo
	}
	return from - 1, nil
}

// scanPrefix reads [from, to) without decoding messages: it counts message
// entries and collects every 8-character "id" value (a superset of the
// entry ids, which is what uniqueness needs).
func scanPrefix(f io.ReaderAt, from, to int64) (msgs int, ids map[string]struct{}, err error) {
	ids = make(map[string]struct{})
	r := bufio.NewReaderSize(io.NewSectionReader(f, from, to-from), 64<<10)
	var buf []byte
	idKey := []byte(`"id":"`)
	msgType := []byte(`"type":"message"`)
	for {
		buf, err = ReadLine(r, buf[:0])
		if len(buf) > 0 {
			if bytes.HasPrefix(bytes.TrimSpace(buf), []byte(`{`+string(msgType))) {
				msgs++
			} else if !bytes.HasPrefix(bytes.TrimSpace(buf), []byte(`{"type":`)) && bytes.Contains(buf, msgType) {
				if n, perr := ParseEntry(buf, 0); perr == nil && n != nil && n.IsMessage {
					msgs++
				}
			}
			for b := buf; ; {
				i := bytes.Index(b, idKey)
				if i < 0 {
					break
				}
				b = b[i+len(idKey):]
				if j := bytes.IndexByte(b, '"'); j == 8 {
					ids[string(b[:8])] = struct{}{}
				}
			}
		}
		if err == io.EOF {
			return msgs, ids, nil
		}
		if err != nil {
			return 0, nil, fmt.Errorf("transcript: read: %w", err)
		}
	}
}
