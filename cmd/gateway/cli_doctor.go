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
	"github.com/gateway/gateway/sessions/filestore"
	"github.com/gateway/gateway/sessions/pgstore"
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
	kindUnknownAgent      = pgstore.CodeDeliveryUnknownAgent
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
	// stored is the sessions finding behind it (repaired by filestore.Repair);
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

// doctorLong is `gateway doctor --help`: every problem it reports and
// what --fix does.
const doctorLong = `doctor first reports the storage backend (storage.backend): its kind, where it is, its schema
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
With the postgres backend it compares, in one read-only snapshot, the entries with their
transcript rows, the transcripts' head rows and the archive, and reports:
  schema-older        the database lacks migrations this binary has (the daemon applies them)
  schema-newer        a newer gateway migrated the database: this binary is older than the schema
  missing-transcript  an entry with counters but no transcript rows (fix: counters zeroed), or
                      transcript rows without their session header (reported only)
  counter-lag         messageCount/compactionCount that disagree with the rows (fix: set from the
                      rows); a head row (transcript_heads) missing, behind the rows or without
                      rows (fix: rebuilt from the rows, or removed)
  orphan-transcript   transcript rows no entry and no archived session names (fix: recorded as an
                      archived session of its header's key, reason "recovered", so it can be
                      switched back to; without a usable header, reported only)
  journal-backlog     pending messages or replies waiting for more than a day (reported only)
  delivery-unknown-agent  pending messages or replies, older than 10 minutes, of an agent with no
                      session, current or archived (reported only)
On postgres --fix refuses, changing nothing, while a daemon (or gateway storage migrate) uses
the database: stop the daemons first. The checks still run beside them.
The stored-state checks and repairs belong to the storage packages (sessions.Check/Repair,
pgstore's Check/Repair); permissions and free space of the state directory are checked here
for every backend.
No transcript is ever deleted. On files, run --fix with the daemon stopped when you can: the
store lock keeps concurrent writers safe, but counters the daemon has not flushed yet may be
counted twice.
Exit code 0: healthy (or everything fixed); 1: problems remain.`

func doctorCmd(cfgPath *string) *cobra.Command {
	var fix, asJSON bool
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Check the storage backend and the state directory (index vs transcripts, counters, permissions, lock files, schema); --fix repairs",
		Long:  doctorLong,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withConfig(cmd, *cfgPath, func(env *cliEnv) error {
				rep, err := runDoctor(env.ctx, env.cfg, fix)
				if err != nil {
					return err
				}
				if asJSON {
					if err := printJSON(env.out, rep); err != nil {
						return err
					}
				} else {
					printDoctor(env.out, rep, fix)
				}
				if rep.Remaining > 0 {
					return errProblems
				}
				return nil
			})
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
	if rep.Storage.FixRefused != "" {
		fmt.Fprintf(w, "--fix refused, nothing in the storage was changed (the checks above ran read-only): %s\n"+
			"        stop the daemon(s) using it and run gateway doctor --fix again\n", rep.Storage.FixRefused)
	}
}

// runDoctor inspects (and with fix, repairs) cfg's storage: the backend's
// status; with the files backend the stored state through
// filestore.Check/Repair; the host (permissions, free space of the state
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
	var b sessions.Backend
	rep.Storage, b = checkStorage(ctx, cfg)
	if b != nil {
		defer b.Close()
	}
	if p := rep.Storage.problem(); p != nil {
		rep.Problems = append(rep.Problems, p)
	}
	// Settle: a daemon running beside the check is mid-turn somewhere.
	opts := sessions.CheckOptions{Now: time.Now(), LockTimeout: cfg.Session.LockTimeout, Settle: sessions.DefaultSettle}
	stored, repairStored, err := checkStored(ctx, cfg, b, opts, &rep.Storage)
	if err != nil {
		return nil, fmt.Errorf("doctor: %w", err)
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
		repair(ctx, cfg.StateDir, repairStored, rep)
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

// checkStored runs the stored-state checks of cfg's backend (b, open when
// it answers): the files backend's read the state directory, another
// backend checks itself (storeChecker). It returns what it found and how
// to repair it (nil when nothing ran).
func checkStored(ctx context.Context, cfg *configs.Config, b sessions.Backend, opts sessions.CheckOptions,
	st *storageReport) ([]sessions.Problem, func(context.Context, []sessions.Problem) []error, error) {
	if usesFiles(cfg) {
		ps, err := filestore.Check(ctx, cfg.StateDir, opts)
		st.StoredChecks = err == nil
		return ps, func(ctx context.Context, ps []sessions.Problem) []error {
			return filestore.Repair(ctx, cfg.StateDir, ps, opts)
		}, err
	}
	if b == nil {
		st.Note = unreachableNote
		return nil, nil, nil
	}
	sc, ok := b.(storeChecker)
	if !ok {
		st.Note = "the " + b.Kind() + " backend has no stored-state checks (entries, transcripts, delivery) yet; " +
			"only the state directory's permissions and free space were checked"
		return nil, nil, nil
	}
	ps, err := sc.Check(ctx, opts)
	st.StoredChecks = err == nil
	return ps, func(ctx context.Context, ps []sessions.Problem) []error { return sc.Repair(ctx, ps, opts) }, err
}

func afterHost(code string) bool {
	return code == kindJournalDamage || code == kindJournalStuck || code == kindBadLine || code == kindUnknownAgent
}

func fromStored(p sessions.Problem) *problem {
	return &problem{Kind: p.Code, Path: p.Path, Detail: p.Message, Fix: p.Fix, stored: &p}
}

// repair fixes what can be fixed: the stored state in one call of the
// backend's repair (files: one store lock per change, one passive
// Manager; postgres: refused while a daemon uses the database, which
// FixRefused then says), then the host.
func repair(ctx context.Context, stateDir string, repairStored func(context.Context, []sessions.Problem) []error, rep *doctorReport) {
	var batch []sessions.Problem
	var owners []*problem
	for _, p := range rep.Problems {
		if p.stored != nil && p.stored.Fixable {
			batch = append(batch, *p.stored)
			owners = append(owners, p)
		}
	}
	if len(batch) > 0 && repairStored != nil {
		for i, err := range repairStored(ctx, batch) {
			if errors.Is(err, pgstore.ErrInUse) {
				rep.Storage.FixRefused = oneLine(err.Error())
				continue
			}
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
