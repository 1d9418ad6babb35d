package filestore

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/gateway/gateway/sessions"
	"go.uber.org/zap"
)

// JournalReport is what InspectJournal found, without changing anything.
type JournalReport struct {
	Path  string
	Bytes int64
	Lines int
	// BadLines are line numbers that do not parse (outside damage: the
	// writer cuts failed writes back); TornTail is a last line without its
	// newline (a crash while appending; cut off at the next start).
	BadLines []int
	TornTail bool
	// Pending records without an outcome and Replies not completely
	// delivered: what the next start resumes.
	Pending, Replies int
	// OldestPending is when the oldest pending record was accepted.
	OldestPending time.Time
}

// InspectJournal reads <stateDir>/ingress/journal.jsonl read-only (for
// `gateway doctor`; it takes no lock and may run beside the daemon). A
// missing journal is an empty report.
func InspectJournal(stateDir string) (JournalReport, error) {
	path := filepath.Join(stateDir, "ingress", "journal.jsonl")
	rep := JournalReport{Path: path}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return rep, nil
	}
	if err != nil {
		return rep, fmt.Errorf("sessions: inspect journal: %w", err)
	}
	defer f.Close()
	j := &Journal{path: path, log: zap.NewNop(), now: time.Now, recs: map[string]*jrec{},
		replies: map[string]*jreply{}, done: newDoneIDs(), doneKeep: sessions.DoneKeep}
	r := bufio.NewReaderSize(f, 64<<10)
	for lineNo := 1; ; lineNo++ {
		line, err := r.ReadBytes('\n')
		rep.Bytes += int64(len(line))
		if len(line) > 0 && line[len(line)-1] != '\n' {
			rep.TornTail = true
			break
		}
		if t := bytes.TrimSpace(line); len(t) > 0 {
			rep.Lines++
			var l journalLine
			if json.Unmarshal(t, &l) != nil {
				rep.BadLines = append(rep.BadLines, lineNo)
			} else {
				j.applyLocked(l)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return rep, fmt.Errorf("sessions: inspect journal: %w", err)
		}
	}
	for _, rec := range j.recs {
		if rec.reply == "" {
			rep.Pending++
		}
		if rep.OldestPending.IsZero() || rec.AcceptedAt.Before(rep.OldestPending) {
			rep.OldestPending = rec.AcceptedAt
		}
	}
	rep.Replies = len(j.replies)
	return rep, nil
}
