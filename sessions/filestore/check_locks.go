package filestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gateway/gateway/sessions"
	"github.com/gofrs/flock"
)

// checkLocks finds lock files below stateDir whose metadata outlived their
// holder (the kernel dropped the flock, the file still names the dead
// process) and locks held longer than DefaultMaxHold.
func checkLocks(stateDir string, now time.Time) ([]sessions.Problem, error) {
	var out []sessions.Problem
	err := filepath.WalkDir(stateDir, func(path string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !de.Type().IsRegular() || !strings.HasSuffix(path, lockExt) {
			return nil
		}
		info, rerr := ReadLockInfo(path)
		if rerr == nil && info.PID == 0 {
			return nil // released: empty metadata
		}
		fl := flock.New(path)
		got, err := fl.TryLock()
		if err != nil {
			return fmt.Errorf("lock %s: %w", path, err)
		}
		if got {
			_ = fl.Unlock()
			out = append(out, sessions.Problem{Code: sessions.CodeStaleLock, Path: path, Fixable: true,
				Message: "not held, but holds metadata of a dead holder (" + describeHolder(info, rerr) + ")",
				Fix:     "truncate the metadata (the file stays)",
				Plan:    repairPlan(func(ctx context.Context, r *repairer) error { return truncateIfFree(path) })})
			return nil
		}
		if rerr == nil && !info.CreatedAt.IsZero() && now.Sub(info.CreatedAt) > DefaultMaxHold && !processLock(stateDir, path) {
			out = append(out, sessions.Problem{Code: sessions.CodeLongHeldLock, Path: path,
				Message: "held for " + now.Sub(info.CreatedAt).Round(time.Second).String() + " by " + describeHolder(info, nil) +
					"; its owner's watchdog should release it (restart that process if it does not)"})
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("sessions: check locks: %w", err)
	}
	return out, nil
}

// processLock reports whether path is a lock its holder keeps for as long
// as it runs (the ingress journal's, the room history's): held long is
// what it is for, so no maxHold applies.
func processLock(stateDir, path string) bool {
	rel, err := filepath.Rel(stateDir, path)
	if err != nil {
		return false
	}
	switch filepath.ToSlash(rel) {
	case "ingress/journal.jsonl" + lockExt, "history/" + historyFile + lockExt:
		return true
	}
	return false
}

func describeHolder(info LockInfo, err error) string {
	if err != nil {
		return "unreadable metadata"
	}
	return fmt.Sprintf("pid %d on %q since %s", info.PID, info.Host, info.CreatedAt.Format(time.RFC3339))
}

// truncateIfFree empties a lock file's metadata while holding its flock,
// so a live holder is never disturbed and the file is never removed
// (SPEC §3.5: removing a lock file in use would let two holders in).
func truncateIfFree(path string) error {
	fl := flock.New(path)
	got, err := fl.TryLock()
	if err != nil {
		return err
	}
	if !got {
		return errors.New("the lock was taken meanwhile; left alone")
	}
	defer fl.Unlock()
	return os.Truncate(path, 0)
}

// checkJournal reports a damaged or backed-up ingress journal (read-only,
// InspectJournal). Neither is repaired here: the daemon skips bad records
// at start and resumes pending ones.
func checkJournal(stateDir string, opts sessions.CheckOptions) []sessions.Problem {
	rep, err := InspectJournal(stateDir)
	if err != nil {
		return []sessions.Problem{{Code: sessions.CodeJournalDamaged, Path: rep.Path, Message: err.Error()}}
	}
	var out []sessions.Problem
	if len(rep.BadLines) > 0 {
		out = append(out, sessions.Problem{Code: sessions.CodeJournalDamaged, Path: rep.Path,
			Message: fmt.Sprintf("%d unreadable line(s) (first at line %d): changed outside the gateway; those records are skipped at start",
				len(rep.BadLines), rep.BadLines[0])})
	}
	if !rep.OldestPending.IsZero() && opts.Now.Sub(rep.OldestPending) > opts.BacklogAfter {
		out = append(out, sessions.Problem{Code: sessions.CodeJournalBacklog, Path: rep.Path,
			Message: fmt.Sprintf("%d message(s) and %d repl(ies) waiting, the oldest accepted %s: is the daemon running?",
				rep.Pending, rep.Replies, rep.OldestPending.Format("2006-01-02 15:04"))})
	}
	return out
}
