package main

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/gateway/gateway/sessions"
)

// Problem kinds of the storage checks.
const (
	kindLowDisk       = "low-disk-space"
	kindJournalDamage = "journal-damaged"
	kindJournalStuck  = "journal-backlog"
)

// minFreeMiB is the free space below which doctor warns (the journal and
// the transcripts stop taking writes when the disk is full, SPEC §3.7);
// GATEWAY_DOCTOR_MIN_FREE_MB overrides it.
const minFreeMiB = 100

func minFree() uint64 {
	if v, err := strconv.ParseUint(os.Getenv("GATEWAY_DOCTOR_MIN_FREE_MB"), 10, 64); err == nil {
		return v << 20
	}
	return minFreeMiB << 20
}

// checkStorage reports low free space on the state dir's filesystem and a
// damaged or backed-up ingress journal.
func (d *doctor) checkStorage() ([]*problem, error) {
	var out []*problem
	var st syscall.Statfs_t
	if err := syscall.Statfs(d.cfg.StateDir, &st); err != nil {
		return nil, fmt.Errorf("doctor: free space of %s: %w", d.cfg.StateDir, err)
	}
	free := st.Bavail * uint64(st.Bsize)
	total := st.Blocks * uint64(st.Bsize)
	if free < minFree() {
		out = append(out, &problem{Kind: kindLowDisk, Path: d.cfg.StateDir,
			Detail: fmt.Sprintf("%d MiB free of %d MiB: when the disk fills the gateway refuses new messages (503, /readyz fails) until space returns",
				free>>20, total>>20)})
	}
	rep, err := sessions.InspectJournal(d.cfg.StateDir)
	if err != nil {
		return append(out, &problem{Kind: kindJournalDamage, Path: rep.Path, Detail: err.Error()}), nil
	}
	if len(rep.BadLines) > 0 {
		out = append(out, &problem{Kind: kindJournalDamage, Path: rep.Path,
			Detail: fmt.Sprintf("%d unreadable line(s) (first at line %d): changed outside the gateway; those records are skipped at start",
				len(rep.BadLines), rep.BadLines[0])})
	}
	if !rep.OldestPending.IsZero() && d.now.Sub(rep.OldestPending) > 24*time.Hour {
		out = append(out, &problem{Kind: kindJournalStuck, Path: rep.Path,
			Detail: fmt.Sprintf("%d message(s) and %d repl(ies) waiting, the oldest accepted %s: is the daemon running?",
				rep.Pending, rep.Replies, rep.OldestPending.Format("2006-01-02 15:04"))})
	}
	return out, nil
}
