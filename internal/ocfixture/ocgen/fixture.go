package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// writeFixture copies OpenClaw's state into o.Out/state — its SQLite databases
// through VACUUM INTO (a consistent, compacted copy with the WAL folded
// in; the source is opened read-only), its config, and any transcript
// archives — and writes the CLI outputs beside it under expected/.
// Logs, caches, media, the workspace and spools are left out.
func (oc *openclaw) writeFixture(ctx context.Context, sessions, preview []byte) error {
	out := oc.o.Out
	// README.md (hand-written: how and what) stays; the rest is replaced.
	for _, d := range []string{"state", "expected"} {
		if err := os.RemoveAll(filepath.Join(out, d)); err != nil {
			return fmt.Errorf("write fixture: %w", err)
		}
	}
	dst := filepath.Join(out, "state")
	var dbs []string
	err := filepath.WalkDir(oc.state(), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(oc.state(), p)
		if d.IsDir() {
			switch rel {
			case "logs", "cache", "media", "tmp", "workspace", "plugin-skills", "telegram":
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case strings.HasSuffix(p, ".sqlite"):
			dbs = append(dbs, rel)
		case strings.HasSuffix(p, "-wal"), strings.HasSuffix(p, "-shm"), strings.HasSuffix(p, ".lock"):
		case rel == "openclaw.json" || strings.Contains(rel, string(filepath.Separator)+"sessions"+string(filepath.Separator)):
			return copyFile(p, filepath.Join(dst, rel))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("write fixture: %w", err)
	}
	for _, rel := range dbs {
		target := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return fmt.Errorf("write fixture: %w", err)
		}
		script := `const {DatabaseSync}=require("node:sqlite");` +
			`const db=new DatabaseSync(process.argv[1],{readOnly:true});` +
			`db.prepare("VACUUM INTO ?").run(process.argv[2]);db.close();`
		cmd := exec.CommandContext(ctx, oc.o.Node, "-e", script, filepath.Join(oc.state(), rel), target)
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("write fixture: copy %s: %w: %s", rel, err, b)
		}
	}
	exp := filepath.Join(out, "expected")
	if err := os.MkdirAll(filepath.Join(exp, "last-messages"), 0o755); err != nil {
		return fmt.Errorf("write fixture: %w", err)
	}
	if err := writeJSON(filepath.Join(exp, "sessions.json"), sessions); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(exp, "preview.json"), preview); err != nil {
		return err
	}
	// One file per session: its entry of the preview, as OpenClaw gave it.
	var p struct {
		Previews []json.RawMessage `json:"previews"`
	}
	if err := json.Unmarshal(preview, &p); err != nil || len(p.Previews) == 0 {
		oc.o.logf("sessions.preview output has no previews list (%v): only preview.json written", err)
	}
	for _, raw := range p.Previews {
		var k struct {
			Key string `json:"key"`
		}
		if err := json.Unmarshal(raw, &k); err != nil || k.Key == "" {
			return fmt.Errorf("write fixture: a preview without a key: %.200s", raw)
		}
		if err := writeJSON(filepath.Join(exp, "last-messages", HistoryFile(k.Key)), raw); err != nil {
			return err
		}
	}
	return nil
}

// HistoryFile is the file name of a session key's last messages:
// the key with ":" as "_" (keys hold no "/").
func HistoryFile(key string) string {
	return strings.NewReplacer(":", "_", "/", "_").Replace(key) + ".json"
}

// writeJSON stores CLI output re-indented (it must be one JSON value).
func writeJSON(path string, b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("write %s: CLI output is not JSON: %w", filepath.Base(path), err)
	}
	pretty, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if err := os.WriteFile(path, append(pretty, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return nil
}
