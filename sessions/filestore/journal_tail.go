package filestore

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
)

// A reply stored with its transcript's lines (issue 21): the append of a
// turn's answer hands the journal the reply and the bytes of the
// transcript not yet known durable (transcript.ReplyJournal), and one
// journal line, fsynced with the group fsync the accepts share, makes both
// durable — instead of one fsync of the transcript per reply. The
// transcript's own fsync comes later and is shared across replies: a
// rewrite of the log fsyncs every transcript its ready lines name before
// it drops them (syncTailFiles). After a power loss, the start puts the
// lines back where the transcript lacks them (restoreTails), before
// anything reads a transcript.

// journalTail is the transcript bytes a ready line holds.
type journalTail struct {
	// Path is the transcript, relative to the state directory:
	// agents/<agent id>/sessions/<session id>.jsonl and nothing else.
	Path  string `json:"path"`
	Off   int64  `json:"off"`   // where Lines start in the file
	Lines []byte `json:"lines"` // whole JSONL lines
}

var _ transcript.ReplyJournal = (*Journal)(nil)

// TakesReplyAhead reports that the journal stores a sessions.ReplyAhead
// with the append that carries it (the transcript's lines in the reply's
// line: ReadyWithLines).
func (j *Journal) TakesReplyAhead() bool { return j.openErr == nil }

// ReadyWithLines is Ready, durable (fsynced, shared with concurrent
// callers) and holding lines, the bytes of the transcript at path from off
// to its end (transcript.ReplyJournal). It fails, having stored nothing,
// when the reply is not one it stores this way (one that ends a streamed
// draft), path is not a transcript of this state directory, or the line
// cannot be made durable.
func (j *Journal) ReadyWithLines(r sessions.Reply, path string, off int64, lines []byte) error {
	if err := checkReply(r); err != nil {
		return fmt.Errorf("sessions: journal ready with lines: %w", err)
	}
	if r.Draft != "" {
		return errors.New("sessions: journal ready with lines: a reply that ends a draft is stored with Ready")
	}
	rel, err := j.tailRel(path)
	if err != nil {
		return fmt.Errorf("sessions: journal ready with lines: %w", err)
	}
	if j.openErr != nil {
		return j.openErr
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = j.now()
	}
	l := journalLine{Op: "ready", Reply: &r, Tail: &journalTail{Path: rel, Off: off, Lines: lines}}
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return errors.New("sessions: journal ready with lines: closed")
	}
	w, err := j.writeLocked(l, true)
	if err != nil {
		j.mu.Unlock()
		return fmt.Errorf("sessions: journal ready with lines: %w", err)
	}
	j.applyLocked(l)
	j.mu.Unlock()
	if err := j.syncTo(w); err != nil {
		// Not durable: the caller fsyncs the transcript and stores the
		// reply anew with Ready. This one leaves memory (the rewrite after
		// the failed fsync writes the log from memory without it).
		j.mu.Lock()
		j.unreadyLocked(r)
		j.mu.Unlock()
		return fmt.Errorf("sessions: journal ready with lines: %w", err)
	}
	return nil
}

// unreadyLocked forgets reply r, stored by a line that did not become
// durable: its records are unanswered again.
func (j *Journal) unreadyLocked(r sessions.Reply) {
	if rp, ok := j.replies[r.ID]; ok && rp.Sent == 0 {
		delete(j.replies, r.ID)
	}
	j.eachRec(r.Records, func(rec *jrec) {
		if rec.reply == r.ID {
			rec.reply = ""
		}
	})
}

// stateDir is the state directory the journal lives in (<dir>/ingress).
func (j *Journal) stateDir() string { return filepath.Dir(filepath.Dir(j.path)) }

// tailRel is path relative to the state directory, when it names a
// transcript of it.
func (j *Journal) tailRel(path string) (string, error) {
	rel, err := filepath.Rel(j.stateDir(), path)
	if err != nil {
		return "", err
	}
	rel = filepath.ToSlash(rel)
	if _, err := tailFile(j.stateDir(), rel); err != nil {
		return "", err
	}
	return rel, nil
}

// tailFile is the transcript a tail's path names under stateDir; only
// agents/<agent id>/sessions/<session id>.jsonl, with valid ids, names one.
func tailFile(stateDir, rel string) (string, error) {
	parts := strings.Split(rel, "/")
	if len(parts) != 4 || parts[0] != "agents" || parts[2] != "sessions" || !strings.HasSuffix(parts[3], transcriptExt) {
		return "", fmt.Errorf("transcript path %q is not agents/<agent>/sessions/<session>%s", sessions.Clip(rel), transcriptExt)
	}
	dir, err := agentSessionsDir(stateDir, parts[1])
	if err != nil {
		return "", err
	}
	return transcriptPath(dir, strings.TrimSuffix(parts[3], transcriptExt))
}

// takeTailsLocked returns the transcripts the log's ready lines hold lines
// of and forgets them: the caller fsyncs them before a rewrite drops those
// lines (lines written later name theirs anew). The caller holds j.mu.
func (j *Journal) takeTailsLocked() []string {
	if len(j.tails) == 0 {
		return nil
	}
	paths := make([]string, 0, len(j.tails))
	for p := range j.tails {
		paths = append(paths, p)
	}
	clear(j.tails)
	return paths
}

// giveTailsLocked takes back paths a rewrite did not make durable.
func (j *Journal) giveTailsLocked(paths []string) {
	for _, p := range paths {
		j.tails[p] = struct{}{}
	}
}

// syncTailFiles fsyncs the transcripts at paths (relative to the state
// directory); a transcript no longer there (archived, deleted) is skipped.
func (j *Journal) syncTailFiles(paths []string) error {
	for _, rel := range paths {
		abs, err := tailFile(j.stateDir(), rel)
		if err != nil {
			continue // never written: ReadyWithLines checked it
		}
		if err := syncTail(abs); err != nil {
			return fmt.Errorf("transcript %s: %w", rel, err)
		}
	}
	return nil
}

// syncTail fsyncs a transcript whose lines the log holds (a var: tests
// fail it and watch it).
var syncTail = syncFileIfThere

// syncFileIfThere fsyncs the file at path, if it is there.
func syncFileIfThere(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("fsync %s: %w", filepath.Base(path), err)
	}
	err = f.Sync()
	_ = f.Close()
	if err != nil {
		return fmt.Errorf("fsync %s: %w", filepath.Base(path), err)
	}
	return nil
}

// restoreTails puts the lines the log's ready lines hold back into their
// transcripts where these lack them (a power loss took bytes the journal
// had made durable), in the order of their offsets, and fsyncs each
// transcript it changed. Bytes already there are left alone; a transcript
// gone (archived, deleted) or shorter than where its lines start is
// skipped with an error logged.
func (j *Journal) restoreTails(tails []journalTail) {
	byFile := map[string][]journalTail{}
	for _, t := range tails {
		byFile[t.Path] = append(byFile[t.Path], t)
	}
	for rel, ts := range byFile {
		slices.SortStableFunc(ts, func(a, b journalTail) int { return cmp.Compare(a.Off, b.Off) })
		if err := j.restoreFile(rel, ts); err != nil {
			j.log.Error("transcript lines held by the journal not restored", zap.String("path", rel), zap.Error(err))
		}
	}
}

// restoreFile is restoreTails for one transcript, its tails by offset.
func (j *Journal) restoreFile(rel string, ts []journalTail) error {
	abs, err := tailFile(j.stateDir(), rel)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(abs, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // archived or deleted since
	}
	if err != nil {
		return err
	}
	defer f.Close()
	changed := false
	for _, t := range ts {
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		end := t.Off + int64(len(t.Lines))
		if fi.Size() >= end {
			have := make([]byte, len(t.Lines))
			if _, err := f.ReadAt(have, t.Off); err != nil {
				return err
			}
			if bytes.Equal(have, t.Lines) {
				continue
			}
		}
		if fi.Size() < t.Off {
			return fmt.Errorf("the transcript ends at %d, before the lines the journal holds from %d", fi.Size(), t.Off)
		}
		if err := f.Truncate(t.Off); err != nil {
			return err
		}
		if _, err := f.WriteAt(t.Lines, t.Off); err != nil {
			return err
		}
		changed = true
		j.log.Warn("transcript lines restored from the ingress journal", zap.String("path", rel),
			zap.Int64("offset", t.Off), zap.Int("bytes", len(t.Lines)), zap.Int64("had", fi.Size()))
	}
	if changed {
		return f.Sync()
	}
	return nil
}
