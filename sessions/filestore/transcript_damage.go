package filestore

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gateway/gateway/sessions/transcript"
	"github.com/gofrs/flock"
)

// quarantineExt names the file beside a transcript that keeps the lines
// doctor --fix removed from it.
const quarantineExt = ".quarantine"

// BadLine is a whole transcript line that does not parse.
type BadLine struct {
	Line   int   // 1-based
	Offset int64 // byte offset
	Err    string
}

// ScanTranscript lists the bad whole lines of the transcript at path
// (read-only; a torn last line is not counted: the next append cuts it).
func ScanTranscript(path string) ([]BadLine, error) {
	s, err := summarizeTranscript(path)
	return s.bad, err
}

// QuarantineTranscript moves the bad whole lines of the transcript at path
// (never its header) to path+".quarantine" (appended, so nothing is ever
// lost) and rewrites the transcript atomically without them, holding the
// transcript's lock. It returns how many lines it moved.
func QuarantineTranscript(path string) (int, error) {
	fl := flock.New(path+lockExt, flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(0o600))
	ok, err := fl.TryLock()
	if err != nil {
		return 0, fmt.Errorf("transcript: quarantine: %w", err)
	}
	if !ok {
		return 0, fmt.Errorf("transcript: quarantine: %s is in use (a turn is writing it); try again", filepath.Base(path))
	}
	defer fl.Unlock()
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("transcript: quarantine: %w", err)
	}
	defer f.Close()
	var keep, moved bytes.Buffer
	n := 0
	err = eachLine(f, func(line int, off int64, b []byte, complete bool) {
		bad := false
		if complete && line > 1 {
			_, perr := transcript.ParseEntry(b, off)
			bad = perr != nil
		}
		if bad {
			moved.Write(b)
			n++
			return
		}
		keep.Write(b)
	})
	if err != nil || n == 0 {
		return 0, err
	}
	q, err := os.OpenFile(path+quarantineExt, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return 0, fmt.Errorf("transcript: quarantine: %w", err)
	}
	if _, err := q.Write(moved.Bytes()); err != nil {
		q.Close()
		return 0, fmt.Errorf("transcript: quarantine: %w", err)
	}
	if err := errors.Join(q.Sync(), q.Close()); err != nil {
		return 0, fmt.Errorf("transcript: quarantine: %w", err)
	}
	if err := writeFileAtomic(path, keep.Bytes()); err != nil {
		return 0, fmt.Errorf("transcript: quarantine: %w", err)
	}
	return n, nil
}

// eachLine calls fn for every line of r with its number, offset and
// whether it ends with '\n' (the bytes include it).
func eachLine(r io.Reader, fn func(line int, off int64, b []byte, complete bool)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		buf []byte
		off int64
	)
	for line := 1; ; line++ {
		var err error
		buf, err = transcript.ReadLine(br, buf[:0])
		if len(buf) > 0 {
			fn(line, off, buf, buf[len(buf)-1] == '\n')
			off += int64(len(buf))
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
