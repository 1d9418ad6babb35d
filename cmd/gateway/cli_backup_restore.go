package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/gateway/gateway/gatewayd"
	"github.com/gateway/gateway/internal/atomicfile"
)

const backupRestoreLong = `Restore a backup made by ` + "`gateway backup create`" + ` into the state dir.

The archive is checked completely first (as ` + "`backup verify`" + `) while it is
extracted into a new directory beside the state dir; nothing is changed
when it is damaged. Then the new directory takes the state dir's name in one
step: a crash at any point leaves the old state or the new one under that
name, never a mix (a crash before the swap leaves a ".<name>.restore-*"
directory beside it, which may be removed).

It refuses while a daemon runs on the state dir (stop it first: a running
daemon keeps the old state open and would write to it), and refuses a state
dir that is not empty unless --force; the replaced state is then kept
beside it as <name>.pre-restore-<time>, never deleted. Replacing an
existing directory needs Linux (renameat2) and fails on a mount point: for
a volume, restore into a new --state-dir.`

func backupRestoreCmd(cfgPath *string) *cobra.Command {
	var stateDir string
	var force bool
	c := &cobra.Command{
		Use:   "restore FILE",
		Short: "Restore a backup into the state dir, atomically; refuses beside a running daemon",
		Long:  backupRestoreLong,
		Args:  exactArgs("FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withConfig(cmd, *cfgPath, func(env *cliEnv) error {
				dir, err := backupStateDir(env.cfg, stateDir, "restore")
				if err != nil {
					return err
				}
				return restoreBackup(env.ctx, env.out, args[0], dir, force)
			})
		},
	}
	c.Flags().StringVar(&stateDir, "state-dir", "", "the state dir to restore into (default: the config's stateDir)")
	c.Flags().BoolVar(&force, "force", false, "replace a state dir that is not empty (the old one is kept beside it)")
	return c
}

// pidLockName is the daemon's lock file in a state dir (gatewayd).
const pidLockName = "gateway.pid"

// restoreBackup restores the archive at path into target (see
// backupRestoreLong).
func restoreBackup(ctx context.Context, out io.Writer, path, target string, force bool) error {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("backup restore: %w", err)
	}
	parent := filepath.Dir(target)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return fmt.Errorf("backup restore: %w", err)
	}
	fi, err := os.Stat(target)
	exists := err == nil
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("backup restore: state dir: %w", err)
	}
	if exists && !fi.IsDir() {
		return fmt.Errorf("backup restore: %s is not a directory", target)
	}
	empty := true
	if exists {
		// Hold the daemon's lock until the swap: no daemon runs on the
		// old state, and none starts on it meanwhile.
		release, err := gatewayd.LockStateDir(target)
		if err != nil {
			return fmt.Errorf("backup restore: refused: %w", err)
		}
		defer release()
		if empty, err = isEmptyDir(target, pidLockName); err != nil {
			return fmt.Errorf("backup restore: state dir: %w", err)
		}
		if !empty && !force {
			return fmt.Errorf("backup restore: refused: state dir %s is not empty; restore into an empty or new --state-dir, "+
				"or pass --force to replace it (the current state is kept beside it as %s.pre-restore-<time>)", target, filepath.Base(target))
		}
	}
	staging, err := os.MkdirTemp(parent, "."+filepath.Base(target)+".restore-")
	if err != nil {
		return fmt.Errorf("backup restore: %w", err)
	}
	swapped := false
	defer func() {
		if !swapped {
			_ = os.RemoveAll(staging)
		}
	}()
	m, err := verifyBackup(ctx, out, path, staging)
	if err != nil {
		return err
	}
	if !exists {
		if err := atomicfile.Rename(staging, target); err != nil {
			return fmt.Errorf("backup restore: %w", err)
		}
		swapped = true
		fmt.Fprintf(out, "backup restore: %s -> %s: %d files (made %s)\n", path, target, len(m.Files), m.CreatedAt.Format(time.RFC3339))
		return nil
	}
	if err := exchangeDirs(staging, target); err != nil {
		return fmt.Errorf("backup restore: %w", err)
	}
	swapped = true
	if err := atomicfile.SyncDir(parent); err != nil {
		return fmt.Errorf("backup restore: %w", err)
	}
	// staging now holds the old state.
	kept := ""
	if empty {
		_ = os.RemoveAll(staging)
	} else {
		kept = target + ".pre-restore-" + time.Now().UTC().Format("20060102T150405Z")
		if err := atomicfile.Rename(staging, kept); err != nil {
			return fmt.Errorf("backup restore: restored; the old state is at %s: %w", staging, err)
		}
	}
	fmt.Fprintf(out, "backup restore: %s -> %s: %d files (made %s)\n", path, target, len(m.Files), m.CreatedAt.Format(time.RFC3339))
	if kept != "" {
		fmt.Fprintf(out, "backup restore: the replaced state is kept at %s\n", kept)
	}
	return nil
}
