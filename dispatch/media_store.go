package dispatch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/internal/atomicfile"
	"github.com/gateway/gateway/routing"
)

// Downloaded media live under <stateDir>/media/<agentId>/<sessionId>/,
// one file per content (named by its SHA-256 and an extension chosen from
// the MIME type), files 0600 and directories 0700. Nothing from a chat
// becomes part of a path. A session's directory goes when the session
// stops being current (reset, /delete, maintenance), by PruneMedia.

// mediaRoot is where downloads are kept.
func (mf mediaFetcher) mediaRoot() string {
	d := mf.d
	return filepath.Join(d.opts.StateDir, "media")
}

// safeSegment reports whether s may be one path segment we generated
// (an agent id or a session UUID).
func safeSegment(s string) bool {
	return s != "" && s != "." && s != ".." && routing.ValidID(s)
}

// saveMedia reads r (at most max bytes; more fails with a
// *channels.MediaTooLargeError from the reader) and stores it for the
// session; it returns the content and the file's path.
func saveMedia(root, agentID, sessionID, ext string, r io.Reader) ([]byte, string, error) {
	if !safeSegment(agentID) || !safeSegment(sessionID) {
		return nil, "", fmt.Errorf("media: save: bad agent or session id %q/%q", agentID, sessionID)
	}
	dir := filepath.Join(root, agentID, sessionID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", fmt.Errorf("media: save: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".part-*") // 0600
	if err != nil {
		return nil, "", fmt.Errorf("media: save: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	var buf bytes.Buffer
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(tmp, h, &buf), r); err != nil {
		tmp.Close()
		return nil, "", fmt.Errorf("media: save: %w", err)
	}
	// Synced before the rename: a crash must never leave a torn file under
	// the content's hash name, which a replayed turn would trust.
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return nil, "", fmt.Errorf("media: save: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, "", fmt.Errorf("media: save: %w", err)
	}
	path := filepath.Join(dir, hex.EncodeToString(h.Sum(nil))+ext)
	if err := atomicfile.Rename(tmp.Name(), path); err != nil {
		return nil, "", fmt.Errorf("media: save: %w", err)
	}
	return buf.Bytes(), path, nil
}

// PruneMedia removes the downloads of every session that is no longer the
// current session of its key (archived by a reset or /delete, pruned by
// maintenance) and of agents without sessions. It returns how many
// session directories it removed.
func (d *Dispatcher) PruneMedia() (int, error) {
	root := d.media.mediaRoot()
	agents, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("media: prune: %w", err)
	}
	removed := 0
	var errs []error
	for _, a := range agents {
		if !a.IsDir() || !safeSegment(a.Name()) {
			continue
		}
		dirs, err := os.ReadDir(filepath.Join(root, a.Name()))
		if err != nil || len(dirs) == 0 {
			continue
		}
		live, err := d.media.liveSessions(a.Name())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, s := range dirs {
			if !s.IsDir() || live[s.Name()] {
				continue
			}
			if err := os.RemoveAll(filepath.Join(root, a.Name(), s.Name())); err != nil {
				errs = append(errs, fmt.Errorf("media: prune: %w", err))
				continue
			}
			removed++
		}
	}
	return removed, errors.Join(errs...)
}

// liveSessions is the set of current session ids of agentID.
func (mf mediaFetcher) liveSessions(agentID string) (map[string]bool, error) {
	d := mf.d
	st, err := d.opts.Sessions.Store(agentID)
	if err != nil {
		return nil, fmt.Errorf("media: prune: store %s: %w", agentID, err)
	}
	entries, err := st.List()
	if err != nil {
		return nil, fmt.Errorf("media: prune: list %s: %w", agentID, err)
	}
	live := make(map[string]bool, len(entries))
	for _, e := range entries {
		live[e.SessionID] = true
	}
	return live, nil
}

// OutMediaKeep is how long the files of replies are kept after their last
// use (the outbox resends a reply within hours; a file pruned under an
// older one goes as a text notice).
const OutMediaKeep = 30 * 24 * time.Hour

// RunMediaPrune calls PruneMedia (and prunes the reply media older than
// OutMediaKeep) at once and then every interval until
// ctx ends; it returns then.
func (d *Dispatcher) RunMediaPrune(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if n, err := d.PruneMedia(); err != nil {
			d.log.Warn("media prune failed", zap.Error(err))
		} else if n > 0 {
			d.log.Info("media of ended sessions removed", zap.Int("sessions", n))
		}
		if st := d.opts.Media; st != nil {
			if n, err := st.Prune(d.opts.Now().Add(-OutMediaKeep)); err != nil {
				d.log.Warn("reply media prune failed", zap.Error(err))
			} else if n > 0 {
				d.log.Info("old reply media removed", zap.Int("files", n))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
