package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// kindBadLine is a transcript line that does not parse (outside damage):
// loading skips it; --fix moves it to <transcript>.quarantine.
const kindBadLine = "transcript-bad-line"

// checkTranscriptLines scans every agent's transcripts for bad lines.
func (d *doctor) checkTranscriptLines() ([]*problem, error) {
	var out []*problem
	agents, err := os.ReadDir(filepath.Join(d.cfg.StateDir, "agents"))
	if err != nil {
		return nil, nil // no agents yet: nothing to scan
	}
	for _, a := range agents {
		if !a.IsDir() || !routing.ValidID(a.Name()) {
			continue
		}
		files, err := filepath.Glob(filepath.Join(d.cfg.StateDir, "agents", a.Name(), "sessions", "*.jsonl"))
		if err != nil {
			return nil, fmt.Errorf("doctor: transcripts: %w", err)
		}
		for _, path := range files {
			if _, ok := isTranscriptName(filepath.Base(path)); !ok {
				continue // sessions.delta.jsonl (the index's change log) and strays
			}
			bad, err := sessions.ScanTranscript(path)
			if err != nil {
				return nil, fmt.Errorf("doctor: %w", err)
			}
			if len(bad) == 0 {
				continue
			}
			lines := make([]string, 0, len(bad))
			for _, b := range bad[:min(len(bad), 5)] {
				lines = append(lines, fmt.Sprintf("line %d (%s)", b.Line, b.Err))
			}
			p := &problem{Kind: kindBadLine, Path: path,
				Detail: fmt.Sprintf("%d unreadable line(s), skipped when loading: %s", len(bad), strings.Join(lines, "; ")),
				Fix:    "move them to " + filepath.Base(path) + ".quarantine and rewrite the transcript without them"}
			p.fix = func(ctx context.Context) error {
				_, err := sessions.QuarantineTranscript(path)
				return err
			}
			out = append(out, p)
		}
	}
	return out, nil
}
