package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/sessions"
)

// Problem kinds reported by `gateway doctor`: the stored-state ones are
// the sessions package's codes (it checks and repairs its own data); the
// host ones are checked here.
const (
	kindIndexUnreadable   = sessions.CodeIndexUnreadable
	kindMissingTranscript = sessions.CodeMissingTranscript
	kindOrphanTranscript  = sessions.CodeOrphanTranscript
	kindUnrenamedArchive  = sessions.CodeUnrenamedArchive
	kindCounterLag        = sessions.CodeCounterLag
	kindStaleLock         = sessions.CodeStaleLock
	kindLongHeldLock      = sessions.CodeLongHeldLock
	kindJournalDamage     = sessions.CodeJournalDamaged
	kindJournalStuck      = sessions.CodeJournalBacklog
	kindBadLine           = sessions.CodeTranscriptBadLine
	kindPermissions       = "permissions"
	kindLowDisk           = "low-disk-space"
)

// problem is one finding as doctor prints it; Fixed says --fix repaired it.
type problem struct {
	Kind   string `json:"kind"`
	Path   string `json:"path"`
	Detail string `json:"detail"`
	Fixed  bool   `json:"fixed"`
	Fix    string `json:"fix,omitempty"` // what --fix did or would do
	// stored is the sessions finding behind it (repaired by sessions.Repair);
	// fix repairs a host problem. Both nil: the problem needs a human.
	stored *sessions.Problem
	fix    func(ctx context.Context) error
}

type doctorReport struct {
	Storage   storageReport `json:"storage"`
	StateDir  string        `json:"stateDir"`
	Problems  []*problem    `json:"problems"`
	Fixed     int           `json:"fixed"`
	Remaining int           `json:"remaining"`
}

func doctorCmd(cfgPath *string) *cobra.Command {
	var fix, asJSON bool
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Check the storage backend and the state directory (index vs transcripts, counters, permissions, lock files); --fix repairs",
		Long: `doctor first reports the storage backend (storage.backend): its kind, where it is, its schema
version (postgres) and whether it answers (storage-unreachable when not).

With the files backend it then compares each agent's sessions.json with its transcripts and reports:
  missing-transcript  an entry whose transcript is gone (fix: its counters are zeroed to match)
  orphan-transcript   a transcript without an entry (fix: the entry is re-created from the
                      transcript's header; if the key already has a newer session, the orphan is
                      archived as <id>.jsonl.reset.<ts> instead)
  unrenamed-archive   an archived session whose transcript was not renamed (fix: renamed)
  counter-lag         messageCount/compactionCount behind the transcript (fix: recounted)
  index-unreadable    sessions.json is not valid JSON (fix: kept as sessions.json.corrupt.<ts>,
                      the index is rebuilt from the transcripts)
  permissions         files not 0600, directories not 0700 (fix: chmod)
  stale-lock          lock metadata left by a dead holder (fix: truncated; lock files are never deleted)
  long-held-lock      a live lock held longer than 5 minutes (reported only)
  transcript-bad-line transcript lines that do not parse (fix: moved to <transcript>.quarantine)
  journal-damaged     ingress journal lines that do not parse (reported only)
  journal-backlog     ingress records waiting for more than a day (reported only)
  low-disk-space      little free space under the state directory (reported only)
The stored-state checks and repairs are the sessions package's (sessions.Check/Repair) and
apply to the files backend only; permissions and free space of the state directory are checked
here for every backend.
No transcript is ever deleted. Run --fix with the daemon stopped when you can: the store
lock keeps concurrent writers safe, but counters the daemon has not flushed yet may be
counted twice.
Exit code 0: healthy (or everything fixed); 1: problems remain.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(*cfgPath)
			if err != nil {
				return err
			}
			rep, err := runDoctor(cmd.Context(), cfg, fix)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := printJSON(out, rep); err != nil {
					return err
				}
			} else {
				printDoctor(out, rep, fix)
			}
			if rep.Remaining > 0 {
				return errProblems
			}
			return nil
		},
	}
	c.Flags().BoolVar(&fix, "fix", false, "repair what can be repaired safely")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func printDoctor(w io.Writer, rep *doctorReport, fix bool) {
	printStorage(w, rep.Storage)
	if len(rep.Problems) == 0 {
		fmt.Fprintf(w, "state directory %s: no problems found\n", rep.StateDir)
		return
	}
	for _, p := range rep.Problems {
		status := "PROBLEM"
		if p.Fixed {
			status = "FIXED  "
		}
		fmt.Fprintf(w, "%s %-18s %s: %s\n", status, p.Kind, p.Path, p.Detail)
		if p.Fix != "" && (p.Fixed || !fix) {
			verb := "fix:"
			if !p.Fixed {
				verb = "--fix would:"
			}
			fmt.Fprintf(w, "        %s %s\n", verb, p.Fix)
		}
	}
	fmt.Fprintf(w, "%d problem(s), %d fixed, %d remaining\n", len(rep.Problems), rep.Fixed, rep.Remaining)
}

// runDoctor inspects (and with fix, repairs) cfg's storage: the backend's
// status; with the files backend the stored state through
// sessions.Check/Repair; the host (permissions, free space of the state
// directory) here.
func runDoctor(ctx context.Context, cfg *configs.Config, fix bool) (*doctorReport, error) {
	rep := &doctorReport{StateDir: cfg.StateDir, Problems: []*problem{}}
	files := usesFiles(cfg)
	_, err := os.Stat(cfg.StateDir)
	hasStateDir := err == nil
	// The files backend is the state directory; another backend keeps
	// only media and channel files there, made at the daemon's start.
	if err != nil && (files || !errors.Is(err, fs.ErrNotExist)) {
		return nil, fmt.Errorf("doctor: state directory: %w", err)
	}
	rep.Storage = checkStorage(ctx, cfg)
	if p := rep.Storage.problem(); p != nil {
		rep.Problems = append(rep.Problems, p)
	}
	opts := sessions.CheckOptions{Now: time.Now(), LockTimeout: cfg.Session.LockTimeout}
	var stored []sessions.Problem
	if files {
		if stored, err = sessions.Check(ctx, cfg.StateDir, opts); err != nil {
			return nil, fmt.Errorf("doctor: %w", err)
		}
		rep.Storage.StoredChecks = true
	} else {
		rep.Storage.Note = storedChecksNote
	}
	var host []*problem
	if hasStateDir {
		if host, err = checkHost(cfg.StateDir); err != nil {
			return nil, err
		}
	}
	// The order doctor has always printed: indexes, transcripts and locks;
	// then the host; then the journal and bad transcript lines.
	i := 0
	for i < len(stored) && !afterHost(stored[i].Code) {
		i++
	}
	for _, p := range stored[:i] {
		rep.Problems = append(rep.Problems, fromStored(p))
	}
	rep.Problems = append(rep.Problems, host...)
	for _, p := range stored[i:] {
		rep.Problems = append(rep.Problems, fromStored(p))
	}
	if fix {
		repair(ctx, cfg.StateDir, opts, rep)
	}
	for _, p := range rep.Problems {
		if p.Fixed {
			rep.Fixed++
		} else {
			rep.Remaining++
		}
	}
	return rep, nil
}

func afterHost(code string) bool {
	return code == kindJournalDamage || code == kindJournalStuck || code == kindBadLine
}

func fromStored(p sessions.Problem) *problem {
	return &problem{Kind: p.Code, Path: p.Path, Detail: p.Message, Fix: p.Fix, stored: &p}
}

// repair fixes what can be fixed: the stored state in one sessions.Repair
// (one store lock per change, one passive Manager), then the host.
func repair(ctx context.Context, stateDir string, opts sessions.CheckOptions, rep *doctorReport) {
	var batch []sessions.Problem
	var owners []*problem
	for _, p := range rep.Problems {
		if p.stored != nil && p.stored.Fixable {
			batch = append(batch, *p.stored)
			owners = append(owners, p)
		}
	}
	if len(batch) > 0 {
		for i, err := range sessions.Repair(ctx, stateDir, batch, opts) {
			settle(owners[i], err)
		}
	}
	for _, p := range rep.Problems {
		if p.fix != nil {
			settle(p, p.fix(ctx))
		}
	}
	// Repairs chmod nothing, but renames and new files may need it.
	if again, err := checkPermissions(stateDir); err == nil {
		for _, p := range again {
			if p.fix != nil && p.fix(ctx) == nil {
				continue
			}
			rep.Problems = append(rep.Problems, p)
		}
	}
}

func settle(p *problem, err error) {
	if err != nil {
		p.Detail += " (fix failed: " + err.Error() + ")"
		return
	}
	p.Fixed = true
}
