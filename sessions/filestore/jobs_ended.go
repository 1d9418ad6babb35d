package filestore

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/gateway/gateway/sessions"
)

// The ended jobs' file, <stateDir>/jobs/jobs.ended.jsonl (0600), beside
// jobs.json (issue 21: a fire rewrites jobs.json, so it must not grow
// with every job that ever ended). It is append-only, one JSON line a
// record, the last record of an id wins:
//
//	{"endedAt":T,"job":{...}}  the job ended at T (or changed after it ended: MoveJobs)
//	{"removed":"<id>"}          the ended job was removed (RemoveJob)
//	{"forgetBefore":T}          the jobs above it that ended before T are past their retention
//
// A job ends by an append here (fsynced) and then a rewrite of jobs.json
// without it. A crash between the two leaves the job in both files: an
// id whose last record here is an ended job is ended, whatever jobs.json
// says, so it never fires again (and the next change rewrites jobs.json
// without it). A line cut short by a crash (no newline) is no record: its
// job is still live in jobs.json; the next append truncates it.
//
// Maintenance forgets ended jobs past the retention: by a forgetBefore
// line, and by rewriting the file with what is kept once at least half of
// its bytes are forgotten, replaced or removed, so a rewrite never costs
// more than the appends since the last one.

// endedLine is one line of the ended jobs' file.
type endedLine struct {
	EndedAt      time.Time     `json:"endedAt,omitzero"`
	Job          *sessions.Job `json:"job,omitempty"`
	Removed      string        `json:"removed,omitempty"`
	ForgetBefore time.Time     `json:"forgetBefore,omitzero"`
}

// endedRec is the last record of one id.
type endedRec struct {
	job       sessions.Job
	at        time.Time // when the job ended
	removed   bool
	forgotten bool  // a forgetBefore line after it covers it
	n         int64 // bytes of its line
	line      int   // its line's number
}

// endedLog is the ended jobs' file as read.
type endedLog struct {
	size  int64 // bytes of its complete lines (a torn tail excluded)
	lines int
	recs  map[string]endedRec
	// forgets are the forgetBefore lines met while reading the file,
	// applied once it is read (finish).
	forgets []forgetMark
}

// forgetMark is a forgetBefore line: it covers the lines above it only,
// so a clock once set ahead does not make every job ended later forgotten.
type forgetMark struct {
	line   int
	before time.Time
}

func newEndedLog() *endedLog { return &endedLog{recs: map[string]endedRec{}} }

// ended returns the ended job id, if the file holds it and it is not
// forgotten.
func (l *endedLog) ended(id string) (endedRec, bool) {
	r, ok := l.recs[id]
	if !ok || r.removed || r.forgotten {
		return endedRec{}, false
	}
	return r, true
}

// endedOnce reports whether id's last record is an ended job, forgotten
// or not: a copy of it in jobs.json is left over from a crash.
func (l *endedLog) endedOnce(id string) bool {
	r, ok := l.recs[id]
	return ok && !r.removed
}

// visible returns the ended jobs not forgotten.
func (l *endedLog) visible() []endedRec {
	out := make([]endedRec, 0, len(l.recs))
	for id := range l.recs {
		if r, ok := l.ended(id); ok {
			out = append(out, r)
		}
	}
	return out
}

// apply takes in one decoded line of n bytes. A forgetBefore line is
// applied at once (reading, it waits for finish: one pass for all).
func (l *endedLog) apply(ln endedLine, n int64, reading bool) {
	l.size += n
	l.lines++
	switch {
	case ln.Job != nil:
		l.recs[ln.Job.ID] = endedRec{job: *ln.Job, at: ln.EndedAt, n: n, line: l.lines}
	case ln.Removed != "":
		l.recs[ln.Removed] = endedRec{removed: true, n: n, line: l.lines}
	case !ln.ForgetBefore.IsZero() && reading:
		l.forgets = append(l.forgets, forgetMark{line: l.lines, before: ln.ForgetBefore})
	case !ln.ForgetBefore.IsZero():
		for id, r := range l.recs {
			if !r.removed && !r.forgotten && r.at.Before(ln.ForgetBefore) {
				r.forgotten = true
				l.recs[id] = r
			}
		}
	}
}

// finish applies the forgetBefore lines read: a job is forgotten if one
// below its line forgets what ended before its end.
func (l *endedLog) finish() {
	if len(l.forgets) == 0 {
		return
	}
	latest := make([]time.Time, len(l.forgets)) // latest[k]: the latest time of forgets[k:]
	for k := len(l.forgets) - 1; k >= 0; k-- {
		latest[k] = l.forgets[k].before
		if k+1 < len(l.forgets) && latest[k+1].After(latest[k]) {
			latest[k] = latest[k+1]
		}
	}
	for id, r := range l.recs {
		k, _ := slices.BinarySearchFunc(l.forgets, r.line, func(f forgetMark, line int) int { return cmp.Compare(f.line, line) })
		if !r.removed && k < len(l.forgets) && r.at.Before(latest[k]) {
			r.forgotten = true
			l.recs[id] = r
		}
	}
	l.forgets = nil
}

// readEndedLog reads the ended jobs' file at path (none: empty).
func readEndedLog(path string) (*endedLog, error) {
	l := newEndedLog()
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sessions: jobs: read %s: %w", path, err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	for lineNo := 1; ; lineNo++ {
		b, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			l.finish()
			return l, nil // b, if any, is a line a crash cut short
		}
		if err != nil {
			return nil, fmt.Errorf("sessions: jobs: read %s: %w", path, err)
		}
		var ln endedLine
		if t := bytes.TrimSpace(b); len(t) > 0 {
			if err := json.Unmarshal(t, &ln); err != nil {
				return nil, fmt.Errorf("sessions: jobs: decode %s line %d: %w", path, lineNo, err)
			}
		}
		l.apply(ln, int64(len(b)), true)
	}
}

// appendEnded appends lines to the ended jobs' file, which l describes,
// and fsyncs it (and the directory when it creates the file) before it
// returns: a job leaves jobs.json only once its end is durable here. A
// torn tail past l.size is cut first. l takes the lines in.
func appendEnded(path string, l *endedLog, lines []endedLine) error {
	var buf bytes.Buffer
	sizes := make([]int64, len(lines))
	for i, ln := range lines {
		b, err := json.Marshal(ln)
		if err != nil {
			return fmt.Errorf("sessions: jobs: encode ended job: %w", err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
		sizes[i] = int64(len(b) + 1)
	}
	created := false
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		created = true
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("sessions: jobs: append %s: %w", path, err)
	}
	err = func() error {
		if fi, err := f.Stat(); err != nil {
			return err
		} else if fi.Size() != l.size {
			if err := f.Truncate(l.size); err != nil { // a torn tail
				return err
			}
		}
		if _, err := f.WriteAt(buf.Bytes(), l.size); err != nil {
			return err
		}
		return f.Sync()
	}()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && created {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		return fmt.Errorf("sessions: jobs: append %s: %w", path, err)
	}
	for i, ln := range lines {
		l.apply(ln, sizes[i], false)
	}
	return nil
}

// rewriteEnded replaces the ended jobs' file with the jobs of l not
// forgotten that ended at or after cutoff, oldest first, and returns what
// it holds now.
func rewriteEnded(path string, l *endedLog, cutoff time.Time) (*endedLog, error) {
	keep := []endedRec{}
	for _, r := range l.recs {
		if !r.removed && !r.forgotten && !r.at.Before(cutoff) {
			keep = append(keep, r)
		}
	}
	slices.SortFunc(keep, func(a, b endedRec) int {
		return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.job.ID, b.job.ID))
	})
	out := newEndedLog()
	var buf bytes.Buffer
	for _, r := range keep {
		j := r.job
		ln := endedLine{EndedAt: r.at, Job: &j}
		b, err := json.Marshal(ln)
		if err != nil {
			return nil, fmt.Errorf("sessions: jobs: encode ended job: %w", err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
		out.apply(ln, int64(len(b)+1), false)
	}
	if err := writeFileAtomic(path, buf.Bytes()); err != nil {
		return nil, fmt.Errorf("sessions: jobs: rewrite %s: %w", path, err)
	}
	return out, nil
}
