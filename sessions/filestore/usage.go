package filestore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gateway/gateway/sessions"
	"go.uber.org/zap"
)

// UsageLog is the files backend's usage ledger: an append-only JSONL file
// per agent and UTC month, <dir>/<agentId>/<YYYY-MM>.jsonl (files 0600,
// directories 0700; only a valid agent id and the row's month become a
// path). A row is one write(2) on a descriptor opened with O_APPEND, not
// fsynced: a kernel crash may lose the last rows, which `gateway usage
// rebuild` restores from the transcripts. Processes may append to the same
// files at once (the daemon and the CLI's rebuild): each line is one write.
//
// Query reads only the months its filter's Since and Until reach and skips
// lines outside them by comparing the time at the start of each line, so it
// costs one read of those months' files plus a decode of each row in range
// (usageDecoder; BenchmarkUsageQuery: 100,000 rows).
type UsageLog struct {
	dir string
	log *zap.Logger

	mu    sync.Mutex             // guards files, paths, marks
	files map[string]*os.File    // path -> descriptor opened O_APPEND
	paths map[usageMonth]string  // month file paths built so far
	marks map[string]*usageMarks // path -> where its scans may start (usage_marks.go)
	// scanned counts the bytes scans read (tests).
	scanned atomic.Int64
}

// NewUsageLog returns the ledger under dir (created on the first Record).
// A nil log is zap.NewNop().
func NewUsageLog(dir string, log *zap.Logger) *UsageLog {
	if log == nil {
		log = zap.NewNop()
	}
	return &UsageLog{dir: dir, log: log, files: map[string]*os.File{}, paths: map[usageMonth]string{},
		marks: map[string]*usageMarks{}}
}

// usageLinePrefix is what every line starts with, before the time.
const usageLinePrefix = `{"at":"`

// path is the month file of agentID's rows at at (cached: a turn's row
// builds no path).
func (u *UsageLog) path(agentID string, at time.Time) string {
	y, m, _ := at.UTC().Date()
	k := usageMonth{agentID, y*12 + int(m)}
	u.mu.Lock()
	defer u.mu.Unlock()
	p, ok := u.paths[k]
	if !ok {
		p = filepath.Join(u.dir, agentID, at.UTC().Format("2006-01")+".jsonl")
		u.paths[k] = p
	}
	return p
}

// usageMonth is an agent's month: year*12 + month.
type usageMonth struct {
	agent string
	month int
}

// Record implements UsageLog: the rows of one file in one write.
func (u *UsageLog) Record(ctx context.Context, rows ...sessions.UsageRow) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("usage: record: %w", err)
	}
	if len(rows) == 1 { // a turn's row: no grouping needed
		r := rows[0]
		if err := sessions.CheckUsageRow(r); err != nil {
			return fmt.Errorf("usage: record: %w", err)
		}
		line, err := encodeUsageLine(r)
		if err != nil {
			return fmt.Errorf("usage: record: %w", err)
		}
		return u.write(u.path(r.AgentID, r.At), line)
	}
	byPath := map[string][]byte{}
	var order []string
	for _, r := range rows {
		if err := sessions.CheckUsageRow(r); err != nil {
			return fmt.Errorf("usage: record: %w", err)
		}
		line, err := encodeUsageLine(r)
		if err != nil {
			return fmt.Errorf("usage: record: %w", err)
		}
		p := u.path(r.AgentID, r.At)
		if _, ok := byPath[p]; !ok {
			order = append(order, p)
		}
		byPath[p] = append(byPath[p], line...)
	}
	for _, p := range order {
		if err := u.write(p, byPath[p]); err != nil {
			return err
		}
	}
	return nil
}

// write appends lines to the file at path in one write(2).
func (u *UsageLog) write(path string, lines []byte) error {
	f, err := u.file(path)
	if err != nil {
		return fmt.Errorf("usage: record: %w", err)
	}
	if _, err := f.Write(lines); err != nil {
		return fmt.Errorf("usage: record: write %s: %w", path, err)
	}
	return nil
}

// encodeUsageLine is r as one JSON line, the time first and fixed width so
// Query can skip lines without decoding them. It writes the fields of
// UsageRow's JSON form by hand (encoding/json took half of a row's cost);
// TestUsageDecoderMatchesJSON reads them back with encoding/json.
func encodeUsageLine(r sessions.UsageRow) ([]byte, error) {
	b := make([]byte, 0, 384)
	b = append(b, usageLinePrefix...)
	b = r.At.UTC().AppendFormat(b, usageTime)
	b = append(b, '"')
	str := func(key, v string, omitEmpty bool) {
		if omitEmpty && v == "" {
			return
		}
		b = append(b, `,"`...)
		b = append(b, key...)
		b = append(b, `":`...)
		b = appendJSONString(b, v)
	}
	num := func(key string, v int64) {
		b = append(b, `,"`...)
		b = append(b, key...)
		b = append(b, `":`...)
		b = strconv.AppendInt(b, v, 10)
	}
	str("agent", r.AgentID, false)
	str("sessionKey", r.SessionKey, false)
	str("sessionId", r.SessionID, false)
	str("entryId", r.EntryID, false)
	str("channel", r.Channel, true)
	str("room", r.Room, true)
	str("senderId", r.SenderID, true)
	str("senderName", r.SenderName, true)
	str("provider", r.Provider, false)
	str("model", r.Model, false)
	num("input", r.Input)
	num("output", r.Output)
	num("cacheRead", r.CacheRead)
	num("cacheWrite", r.CacheWrite)
	if math.IsNaN(r.Cost) || math.IsInf(r.Cost, 0) {
		return nil, fmt.Errorf("cost %v: not a number JSON can hold", r.Cost)
	}
	b = append(b, `,"cost":`...)
	b = strconv.AppendFloat(b, r.Cost, 'g', -1, 64)
	return append(b, '}', '\n'), nil
}

// appendJSONString appends s (valid UTF-8, CheckUsageRow) as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// file returns the append descriptor of path, opening it (and cutting a
// torn last line a crash left, so the next row is not glued to it).
func (u *UsageLog) file(path string) (*os.File, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if f, ok := u.files[path]; ok {
		return f, nil
	}
	if err := mkdirPrivate(filepath.Dir(path)); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := cutTornTail(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("repair %s: %w", path, err)
	}
	u.files[path] = f
	return f, nil
}

// cutTornTail truncates f after its last newline when its last line is
// incomplete.
func cutTornTail(f *os.File) error {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return err
	}
	const window = 64 << 10
	off := max(st.Size()-window, 0)
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if buf[len(buf)-1] == '\n' {
		return nil
	}
	i := bytes.LastIndexByte(buf, '\n')
	if i < 0 && off > 0 {
		return errors.New("last line longer than 64 KiB")
	}
	return f.Truncate(off + int64(i) + 1)
}

// Close closes the open descriptors.
func (u *UsageLog) Close() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	var err error
	for p, f := range u.files {
		err = errors.Join(err, f.Close())
		delete(u.files, p)
	}
	return err
}

var _ sessions.UsageLog = (*UsageLog)(nil)

// usageFiles is the usage ledger under <stateDir>/usage, made on first use
// and kept so its descriptors serve every caller.
func (m *Manager) usageFiles() *UsageLog {
	m.smu.Lock()
	defer m.smu.Unlock()
	if m.usage == nil {
		m.usage = NewUsageLog(filepath.Join(m.opts.StateDir, "usage"), m.log)
	}
	return m.usage
}
