package filestore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// CheckRestored is Check for a state dir restored from a backup (no
// daemon runs on it): besides what Check reads, every archived
// transcript ("<uuid>.jsonl.reset.<ts>", ".deleted.<ts>") is parsed, and
// its bad lines reported like those of current transcripts.
func CheckRestored(ctx context.Context, stateDir string, opts sessions.CheckOptions) ([]sessions.Problem, error) {
	out, err := Check(ctx, stateDir, opts)
	if err != nil {
		return nil, err
	}
	agents, err := os.ReadDir(filepath.Join(stateDir, "agents"))
	if err != nil {
		return out, nil // Check said what it could of a state dir without agents
	}
	for _, a := range agents {
		if !a.IsDir() || !routing.ValidID(a.Name()) {
			continue
		}
		dir := filepath.Join(stateDir, "agents", a.Name(), "sessions")
		des, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		var names []string
		for _, de := range des {
			if _, _, _, ok := parseArchiveName(de.Name()); ok && de.Type().IsRegular() {
				names = append(names, de.Name())
			}
		}
		sort.Strings(names)
		for _, name := range names {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("sessions: check: %w", err)
			}
			path := filepath.Join(dir, name)
			s, err := summarizeTranscript(path)
			if err != nil {
				return nil, fmt.Errorf("sessions: check: %w", err)
			}
			if len(s.bad) > 0 {
				out = append(out, badLineProblem(a.Name(), path, s.bad))
			}
		}
	}
	return out, nil
}
