package filestore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// The read side of UsageLog: reports, rows and refs from the month files.

// Query implements UsageLog.
func (u *UsageLog) Query(ctx context.Context, f sessions.UsageFilter) ([]sessions.UsageBucket, error) {
	if err := sessions.CheckUsageFilter(f); err != nil {
		return nil, err
	}
	agg := newUsageAgg(f.By)
	err := u.scan(ctx, f.AgentID, f.Since, f.Until, func(r sessions.UsageRow) {
		if f.Selects(r) {
			agg.add(r)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("usage: query: %w", err)
	}
	return agg.buckets(), nil
}

// Rows implements UsageLog.
func (u *UsageLog) Rows(ctx context.Context, f sessions.UsageFilter, fn func(sessions.UsageRow) error) error {
	if err := sessions.CheckUsageFilter(f); err != nil {
		return err
	}
	var ferr error
	err := u.scanRows(ctx, f.AgentID, f.Since, f.Until, true, func(r sessions.UsageRow) {
		if ferr == nil && f.Selects(r) {
			ferr = fn(r)
		}
	})
	if err == nil {
		err = ferr
	}
	if err != nil {
		return fmt.Errorf("usage: rows: %w", err)
	}
	return nil
}

// Refs implements UsageLog.
func (u *UsageLog) Refs(ctx context.Context, agentID string) (map[sessions.UsageRef]bool, error) {
	if !routing.ValidID(agentID) {
		return nil, fmt.Errorf("usage: refs: agent %q: not a valid agent id", agentID)
	}
	out := map[sessions.UsageRef]bool{}
	err := u.scan(ctx, agentID, time.Time{}, time.Time{}, func(r sessions.UsageRow) { out[r.Ref()] = true })
	if err != nil {
		return nil, fmt.Errorf("usage: refs: %w", err)
	}
	return out, nil
}

// scan calls fn with each row of agentID ("" every agent) in [since,
// until), reading only the month files that range reaches.
func (u *UsageLog) scan(ctx context.Context, agentID string, since, until time.Time, fn func(sessions.UsageRow)) error {
	return u.scanRows(ctx, agentID, since, until, false, fn)
}

// scanRows is scan; entryIDs says whether rows carry their entry ids.
func (u *UsageLog) scanRows(ctx context.Context, agentID string, since, until time.Time, entryIDs bool, fn func(sessions.UsageRow)) error {
	agents := []string{agentID}
	if agentID == "" {
		var err error
		if agents, err = u.agents(); err != nil {
			return err
		}
	}
	lo, hi := "", ""
	if !since.IsZero() {
		lo = since.UTC().Format(usageTime)
	}
	if !until.IsZero() {
		hi = until.UTC().Format(usageTime)
	}
	dec := newUsageDecoder()
	dec.skipEntryID = !entryIDs
	for _, a := range agents {
		months, err := u.months(a, since, until)
		if err != nil {
			return err
		}
		for _, p := range months {
			if err := u.scanUsageFile(ctx, dec, p, lo, hi, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// agents lists the agent directories of the ledger.
func (u *UsageLog) agents() ([]string, error) {
	des, err := os.ReadDir(u.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, de := range des {
		if de.IsDir() && routing.ValidID(de.Name()) {
			out = append(out, de.Name())
		}
	}
	return out, nil
}

// months lists agentID's month files that overlap [since, until), oldest
// first.
func (u *UsageLog) months(agentID string, since, until time.Time) ([]string, error) {
	dir := filepath.Join(u.dir, agentID)
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, de := range des {
		name, ok := strings.CutSuffix(de.Name(), ".jsonl")
		if !ok || !de.Type().IsRegular() {
			continue
		}
		start, err := time.Parse("2006-01", name)
		if err != nil {
			continue
		}
		end := start.AddDate(0, 1, 0)
		if (!since.IsZero() && !end.After(since)) || (!until.IsZero() && !start.Before(until)) {
			continue
		}
		out = append(out, filepath.Join(dir, de.Name()))
	}
	slices.Sort(out)
	return out, nil
}

// scanUsageFile decodes the lines of path whose time is in [lo, hi) (text
// times, "" unbounded). A torn last line is skipped; another bad line is
// logged and skipped, so one damaged row does not hide the rest. With lo
// set it starts at the last of the file's marks (usageMarks) before which
// every line is older than lo.
func (u *UsageLog) scanUsageFile(ctx context.Context, dec *usageDecoder, path, lo, hi string, fn func(sessions.UsageRow)) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	marks := u.marksOf(path, fi)
	from := marks.from(lo)
	if from.off > 0 {
		if _, err := f.Seek(from.off, io.SeekStart); err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
	}
	br := bufio.NewReaderSize(f, 64<<10)
	const atEnd = len(usageLinePrefix) + len(usageTime)
	off, maxAt := from.off, from.maxAt
	defer func() { u.scanned.Add(off - from.off) }()
	var r sessions.UsageRow // one per file: decode's fallback makes it escape
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: no row is; skip it.
			off += int64(len(line))
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				off += int64(len(line))
			}
			if errors.Is(err, io.EOF) {
				return nil // torn at the end: as below
			}
			if err != nil {
				return fmt.Errorf("read %s: %w", path, err)
			}
			maxAt = usageNoTime
			marks.passed(off, maxAt)
			u.log.Warn("usage ledger: overlong line skipped", zap.String("path", path), zap.Int("line", n))
			continue
		}
		if errors.Is(err, io.EOF) {
			return nil // a torn last line (or none) ends the file
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		off += int64(len(line))
		if n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		at := usageNoTime // a line without the leading time: never skipped
		if len(line) > atEnd && bytes.HasPrefix(line, []byte(usageLinePrefix)) {
			at = string(line[len(usageLinePrefix):atEnd])
		}
		maxAt = max(maxAt, at)
		marks.passed(off, maxAt)
		if at != usageNoTime && ((lo != "" && at < lo) || (hi != "" && at >= hi)) {
			continue
		}
		if err := dec.decode(line, &r); err != nil {
			u.log.Warn("usage ledger: bad line skipped", zap.String("path", path), zap.Int("line", n), zap.Error(err))
			continue
		}
		fn(r)
	}
}

// usageAgg sums rows into buckets of one dimension.
type usageAgg struct {
	by      string
	m       map[string]*sessions.UsageBucket // by key
	labelAt map[string]time.Time             // when each bucket's label was seen
	// keys caches the bucket keys usageKey builds (a sender's, a model's,
	// a day's), so a row costs no allocation.
	keys map[[2]string]string
	days map[int64]string
}

func newUsageAgg(by string) *usageAgg {
	return &usageAgg{by: by, m: map[string]*sessions.UsageBucket{}, labelAt: map[string]time.Time{},
		keys: map[[2]string]string{}, days: map[int64]string{}}
}

// key is usageKey(r, a.by), cached.
func (a *usageAgg) key(r sessions.UsageRow) string {
	var pair [2]string
	switch a.by {
	case sessions.UsageBySender:
		pair = [2]string{r.Channel, r.SenderID}
	case sessions.UsageByModel:
		pair = [2]string{r.Provider, r.Model}
	case sessions.UsageByDay:
		d := r.At.Unix() / 86400
		if r.At.Unix() < 0 {
			return usageKey(r, a.by)
		}
		k, ok := a.days[d]
		if !ok {
			k = usageKey(r, a.by)
			a.days[d] = k
		}
		return k
	default:
		return usageKey(r, a.by)
	}
	k, ok := a.keys[pair]
	if !ok {
		k = usageKey(r, a.by)
		a.keys[pair] = k
	}
	return k
}

func (a *usageAgg) add(r sessions.UsageRow) {
	k := a.key(r)
	b, ok := a.m[k]
	if !ok {
		b = &sessions.UsageBucket{Key: k}
		a.m[k] = b
	}
	b.Add(r)
	if a.by == sessions.UsageBySender && r.SenderName != "" && !r.At.Before(a.labelAt[k]) {
		b.Label, a.labelAt[k] = r.SenderName, r.At
	}
}

func (a *usageAgg) buckets() []sessions.UsageBucket {
	out := make([]sessions.UsageBucket, 0, len(a.m))
	for _, b := range a.m {
		out = append(out, *b)
	}
	sessions.SortUsage(a.by, out)
	return out
}

// usageKey is the bucket key of r under dimension by (sessions.UsageBucket.Key).
func usageKey(r sessions.UsageRow, by string) string {
	switch by {
	case sessions.UsageBySender:
		return r.SenderKey()
	case sessions.UsageBySession:
		return r.SessionKey
	case sessions.UsageByRoom:
		return r.Room
	case sessions.UsageByModel:
		return r.Provider + "/" + r.Model
	case sessions.UsageByDay:
		return r.At.UTC().Format(time.DateOnly)
	case sessions.UsageByAgent:
		return r.AgentID
	}
	return "total"
}
