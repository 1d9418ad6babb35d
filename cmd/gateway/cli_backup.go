package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
	"github.com/gateway/gateway/sessions/sqlitestore"
)

func backupCmd(cfgPath *string) *cobra.Command {
	return group("backup", "Back up, verify and restore the files backend's state",
		backupCreateCmd(cfgPath), backupVerifyCmd(cfgPath), backupRestoreCmd(cfgPath))
}

const backupCreateLong = `Write a consistent copy of the state dir to FILE (a .tar.gz with a manifest
of every file's size and SHA-256), while the daemon runs or not.

Each agent's index and its transcripts are taken together under the store
lock the daemon takes for every create, reset and delete; append-only files
(transcripts, the ingress journal, usage) are cut at their last whole line;
the parts are read in the order cursors, journal, sessions, the rest, so
that the restored daemon resumes as after a crash: nothing accepted is
lost, counters that lag are repaired at its start. Lock files, the pid
file and the search index (rebuilt from the transcripts) are left out.
FILE is written under a temporary name and renamed when complete.

PostgreSQL is backed up with pg_dump, not with this command (see
deploy/OPERATIONS.md, "Backup and restore").`

func backupCreateCmd(cfgPath *string) *cobra.Command {
	var stateDir string
	var force bool
	c := &cobra.Command{
		Use:   "create FILE",
		Short: "Write a consistent backup of the state dir (files backend), also while the daemon runs",
		Long:  backupCreateLong,
		Args:  exactArgs("FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withConfig(cmd, *cfgPath, func(env *cliEnv) error {
				dir, err := backupStateDir(env.cfg, stateDir, "create")
				if err != nil {
					return err
				}
				if abs, err := filepath.Abs(args[0]); err == nil && strings.HasPrefix(abs, dir+string(filepath.Separator)) {
					return usage("backup create: %s is inside the state dir %s: write the archive elsewhere (the next backup would hold this one)", args[0], dir)
				}
				if _, err := os.Stat(args[0]); err == nil && !force {
					return fmt.Errorf("backup create: %s exists; pass --force to replace it", args[0])
				}
				if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
					return fmt.Errorf("backup create: state dir %s: not a directory (%v)", dir, err)
				}
				if err := refuseSQLite(dir); err != nil {
					return err
				}
				start := time.Now()
				st, err := createBackup(env.ctx, dir, args[0], env.cfg.Session.LockTimeout)
				if err != nil {
					return err
				}
				fmt.Fprintf(env.out, "backup create: %s -> %s: %d files, %d bytes (%d agents, %d transcripts) in %s\n",
					dir, args[0], st.Files, st.Bytes, st.Agents, st.Transcripts, time.Since(start).Round(time.Millisecond))
				return nil
			})
		},
	}
	c.Flags().StringVar(&stateDir, "state-dir", "", "the state dir to back up (default: the config's stateDir)")
	c.Flags().BoolVar(&force, "force", false, "replace FILE if it exists")
	return c
}

const backupVerifyLong = `Check a backup completely: the archive reads to its end (gzip and tar
checksums), every file matches the size and SHA-256 its manifest lists and
nothing is missing or unlisted, and the state it holds is sound: every
transcript (current and archived) parses, each index reads and names no
transcript that is missing, the ingress journal parses. The state is
extracted to a temporary directory (beside --tmp-dir, default the system's)
that is removed afterwards. Findings are printed one a line; exit code 1
when there is any. Notes (counters behind their transcripts, which the
daemon repairs at start; transcripts no entry names, which
` + "`gateway doctor --fix`" + ` adopts) do not fail it.`

func backupVerifyCmd(cfgPath *string) *cobra.Command {
	var tmpDir string
	c := &cobra.Command{
		Use:   "verify FILE",
		Short: "Check a backup: checksums, every transcript parses, indexes consistent",
		Long:  backupVerifyLong,
		Args:  exactArgs("FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withConfig(cmd, *cfgPath, func(env *cliEnv) error {
				dir, err := os.MkdirTemp(tmpDir, "gateway-backup-verify-")
				if err != nil {
					return fmt.Errorf("backup verify: %w", err)
				}
				defer os.RemoveAll(dir)
				m, err := verifyBackup(env.ctx, env.out, args[0], dir)
				if err != nil {
					return err
				}
				fmt.Fprintf(env.out, "backup verify: %s: good (%d files, made %s from %s by gateway %s)\n",
					args[0], len(m.Files), m.CreatedAt.Format(time.RFC3339), m.StateDir, m.Gateway)
				return nil
			})
		},
	}
	c.Flags().StringVar(&tmpDir, "tmp-dir", "", "where to extract the archive for the checks (default: the system's temporary directory)")
	return c
}

// verifyBackup extracts the archive at path into dir and checks it
// (extractBackup, then the state checks). It prints the findings and
// returns an error when there is any, naming the archive.
func verifyBackup(ctx context.Context, out io.Writer, path, dir string) (*backupManifest, error) {
	m, findings, err := extractBackup(path, dir)
	if err != nil {
		return nil, err
	}
	problems, err := filestore.CheckRestored(ctx, dir, sessions.CheckOptions{})
	if err != nil {
		return nil, fmt.Errorf("backup: %s: check: %w", path, err)
	}
	var notes []string
	for _, p := range problems {
		line := fmt.Sprintf("%s: %s: %s", p.Code, relTo(dir, p.Path), p.Message)
		if backupNote(p.Code) {
			notes = append(notes, line)
		} else {
			findings = append(findings, line)
		}
	}
	for _, n := range notes {
		fmt.Fprintf(out, "note: %s\n", n)
	}
	if len(findings) > 0 {
		fmt.Fprintf(out, "backup: %s: %d problem(s):\n", path, len(findings))
		for _, f := range findings {
			fmt.Fprintf(out, "  %s\n", f)
		}
		return nil, fmt.Errorf("backup: %s is damaged (%d problem(s) listed above): %w", path, len(findings), errProblems)
	}
	return m, nil
}

// backupNote reports whether a problem the state check finds in a backup
// is a note rather than damage: counters behind the transcripts (the
// snapshot copies what was appended after the index was written; the
// daemon repairs them at start), transcripts no entry names and
// unrenamed archives (the source had them; doctor --fix adopts them),
// lock findings and an old journal backlog.
func backupNote(code string) bool {
	switch code {
	case sessions.CodeCounterLag, sessions.CodeOrphanTranscript, sessions.CodeUnrenamedArchive,
		sessions.CodeStaleLock, sessions.CodeLongHeldLock, sessions.CodeJournalBacklog:
		return true
	}
	return false
}

// relTo is path below dir, for messages about an extracted archive.
func relTo(dir, path string) string {
	if r, err := filepath.Rel(dir, path); err == nil {
		return filepath.ToSlash(r)
	}
	return path
}

// backupStateDir is the state dir a backup command works on: flag, else
// the config's. The config must keep its state in files.
func backupStateDir(cfg *configs.Config, flag, op string) (string, error) {
	if flag == "" && cfg.Storage.Backend == configs.StorageSQLite {
		return "", fmt.Errorf("backup %s: the config keeps its state in sqlite (%s): %s; this command handles the files backend's state dir",
			op, filepath.Join(cfg.StateDir, sqlitestore.FileName), sqliteBackupHint)
	}
	if flag == "" && !usesFiles(cfg) {
		return "", fmt.Errorf("backup %s: the config keeps its state in %s: back it up with pg_dump and restore with pg_restore "+
			"(deploy/OPERATIONS.md, \"Backup and restore\"); this command handles the files backend's state dir", op, cfg.Storage.Backend)
	}
	dir := flag
	if dir == "" {
		dir = cfg.StateDir
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("backup %s: state dir: %w", op, err)
	}
	return abs, nil
}

// sqliteBackupHint says how a SQLite database is backed up while a daemon
// may be writing it (SQLite's online backup, a consistent copy).
const sqliteBackupHint = `back it up with sqlite3's online backup, also while the daemon runs: sqlite3 DB ".backup FILE"`

// refuseSQLite refuses a files backup of a state dir that holds the sqlite
// backend's database: copied file by file beside a daemon writing it, the
// database and its -wal would be torn.
func refuseSQLite(dir string) error {
	db := filepath.Join(dir, sqlitestore.FileName)
	if _, err := os.Stat(db); err != nil {
		return nil
	}
	return fmt.Errorf("backup create: state dir %s holds a SQLite database (%s), which a file copy would tear: %s; "+
		"to back up only the files state, move the database out of the state dir first", dir, db, sqliteBackupHint)
}

// isEmptyDir reports whether dir holds nothing but ignore (a missing dir
// is empty).
func isEmptyDir(dir string, ignore ...string) (bool, error) {
	des, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	for _, de := range des {
		skip := false
		for _, n := range ignore {
			skip = skip || de.Name() == n
		}
		if !skip {
			return false, nil
		}
	}
	return true, nil
}
