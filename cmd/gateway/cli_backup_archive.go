package main

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gateway/gateway/internal/atomicfile"
	"github.com/gateway/gateway/sessions/filestore"
)

// A backup archive is a gzip-compressed tar of the state dir's files
// (filestore.Snapshot) followed by a manifest, backupManifestName, that
// lists every file with its size and SHA-256. verify and restore check
// every file against it and refuse an archive whose manifest is missing,
// so a truncated archive never restores.
const (
	backupManifestName = "gateway-backup.json"
	backupFormat       = "gateway-backup"
	backupVersion      = 1
)

// backupManifest is the archive's last entry.
type backupManifest struct {
	Format    string       `json:"format"`
	Version   int          `json:"version"`
	Backend   string       `json:"backend"`
	CreatedAt time.Time    `json:"createdAt"`
	Gateway   string       `json:"gateway"`
	StateDir  string       `json:"stateDir"`
	Files     []backupFile `json:"files"`
}

// backupFile is one file of the archive as the manifest lists it.
type backupFile struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// createBackup writes a snapshot of stateDir to path, atomically: the
// archive appears under its name complete and fsynced, or not at all.
func createBackup(ctx context.Context, stateDir, path string, lockTimeout time.Duration) (filestore.SnapshotStats, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return filestore.SnapshotStats{}, fmt.Errorf("backup create: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing to remove
	defer tmp.Close()
	if err := tmp.Chmod(0o600); err != nil {
		return filestore.SnapshotStats{}, fmt.Errorf("backup create: %w", err)
	}
	gz := gzip.NewWriter(tmp)
	tw := tar.NewWriter(gz)
	m := backupManifest{Format: backupFormat, Version: backupVersion, Backend: "files", CreatedAt: time.Now().UTC(),
		Gateway: version, StateDir: stateDir}
	st, err := filestore.Snapshot(ctx, stateDir, lockTimeout, func(f filestore.SnapshotFile) error {
		h := sha256.New()
		if err := tw.WriteHeader(&tar.Header{Name: f.Path, Mode: int64(f.Mode), Size: f.Size, ModTime: m.CreatedAt,
			Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return err
		}
		n, err := io.Copy(io.MultiWriter(tw, h), f.Body)
		if err != nil {
			return err
		}
		if n != f.Size {
			return fmt.Errorf("read %d bytes, want %d (the file shrank while it was copied)", n, f.Size)
		}
		m.Files = append(m.Files, backupFile{Path: f.Path, Size: f.Size, SHA256: hex.EncodeToString(h.Sum(nil))})
		return nil
	})
	if err != nil {
		return st, fmt.Errorf("backup create: %w", err)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return st, fmt.Errorf("backup create: manifest: %w", err)
	}
	if err := tw.WriteHeader(&tar.Header{Name: backupManifestName, Mode: 0o600, Size: int64(len(b)), ModTime: m.CreatedAt,
		Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return st, fmt.Errorf("backup create: manifest: %w", err)
	}
	if _, err := tw.Write(b); err != nil {
		return st, fmt.Errorf("backup create: manifest: %w", err)
	}
	for _, c := range []io.Closer{tw, gz} {
		if err := c.Close(); err != nil {
			return st, fmt.Errorf("backup create: %w", err)
		}
	}
	if err := tmp.Sync(); err != nil {
		return st, fmt.Errorf("backup create: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return st, fmt.Errorf("backup create: %w", err)
	}
	if err := atomicfile.Rename(tmp.Name(), path); err != nil {
		return st, fmt.Errorf("backup create: %w", err)
	}
	return st, nil
}

// errBadArchive is wrapped by the error of an archive that cannot be read
// to its end (damaged, truncated, not a backup).
var errBadArchive = errors.New("not a readable gateway backup")

// extractBackup reads the archive at path into dir (an empty directory):
// every file written 0600 (directories 0700) and fsynced, then compared
// with the manifest. Findings are what does not match, one line each; an
// archive that cannot be read to its end is an error wrapping
// errBadArchive.
func extractBackup(path, dir string) (*backupManifest, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("backup: %w", err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, nil, fmt.Errorf("backup: %s: %w: %w", path, errBadArchive, err)
	}
	tr := tar.NewReader(gz)
	got := map[string]backupFile{}
	var (
		m        *backupManifest
		findings []string
		dirs     = map[string]bool{dir: true}
	)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("backup: %s: %w: after %d files: %w", path, errBadArchive, len(got), err)
		}
		if m != nil {
			findings = append(findings, fmt.Sprintf("%s: an entry after the manifest", h.Name))
		}
		if h.Name == backupManifestName {
			if m, err = readManifest(tr); err != nil {
				return nil, nil, fmt.Errorf("backup: %s: %w: %w", path, errBadArchive, err)
			}
			continue
		}
		if bad := archivePathProblem(h); bad != "" {
			findings = append(findings, fmt.Sprintf("%s: %s (not extracted)", h.Name, bad))
			continue
		}
		if _, dup := got[h.Name]; dup {
			findings = append(findings, fmt.Sprintf("%s: stored twice", h.Name))
			continue
		}
		bf, err := extractFile(tr, dir, h.Name, dirs)
		if err != nil {
			return nil, nil, fmt.Errorf("backup: %s: %s: %w", path, h.Name, err)
		}
		got[h.Name] = bf
	}
	// Read the gzip stream to its end: its checksum is checked there.
	if _, err := io.Copy(io.Discard, gz); err != nil {
		return nil, nil, fmt.Errorf("backup: %s: %w: %w", path, errBadArchive, err)
	}
	if m == nil {
		return nil, nil, fmt.Errorf("backup: %s: %w: no manifest (%s): the archive is truncated or was not made by `gateway backup create`",
			path, errBadArchive, backupManifestName)
	}
	findings = append(findings, compareManifest(m, got)...)
	for d := range dirs {
		if err := atomicfile.SyncDir(d); err != nil {
			return nil, nil, fmt.Errorf("backup: extract: %w", err)
		}
	}
	return m, findings, nil
}

func readManifest(r io.Reader) (*backupManifest, error) {
	var m backupManifest
	if err := json.NewDecoder(io.LimitReader(r, 1<<30)).Decode(&m); err != nil {
		return nil, fmt.Errorf("manifest %s: %w", backupManifestName, err)
	}
	if m.Format != backupFormat || m.Version != backupVersion {
		return nil, fmt.Errorf("manifest %s: format %q version %d, want %q version %d",
			backupManifestName, m.Format, m.Version, backupFormat, backupVersion)
	}
	return &m, nil
}

// archivePathProblem says why entry h may not be extracted ("" when it
// may): only regular files below the state dir.
func archivePathProblem(h *tar.Header) string {
	if h.Typeflag != tar.TypeReg {
		return "not a regular file"
	}
	if !filepath.IsLocal(filepath.FromSlash(h.Name)) || strings.Contains(h.Name, "\\") || strings.ContainsRune(h.Name, 0) {
		return "a path outside the state dir"
	}
	return ""
}

// extractFile writes the entry's content to dir/name (0600, fsynced),
// creating its directories (0700, remembered in dirs for their fsync).
func extractFile(r io.Reader, dir, name string, dirs map[string]bool) (backupFile, error) {
	path := filepath.Join(dir, filepath.FromSlash(name))
	for d := filepath.Dir(path); !dirs[d]; d = filepath.Dir(d) {
		dirs[d] = true
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return backupFile{}, err
	}
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return backupFile{}, err
	}
	defer out.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), r)
	if err != nil {
		return backupFile{}, fmt.Errorf("%w: %w", errBadArchive, err)
	}
	if err := out.Sync(); err != nil {
		return backupFile{}, err
	}
	return backupFile{Path: name, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, out.Close()
}

// compareManifest lists the differences between the files the manifest
// lists and those the archive held.
func compareManifest(m *backupManifest, got map[string]backupFile) []string {
	var out []string
	listed := map[string]bool{}
	for _, want := range m.Files {
		listed[want.Path] = true
		g, ok := got[want.Path]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s: listed in the manifest, missing from the archive", want.Path))
		case g.Size != want.Size:
			out = append(out, fmt.Sprintf("%s: %d bytes, the manifest says %d", want.Path, g.Size, want.Size))
		case g.SHA256 != want.SHA256:
			out = append(out, fmt.Sprintf("%s: checksum mismatch (sha256 %s, the manifest says %s)", want.Path, g.SHA256, want.SHA256))
		}
	}
	var unlisted []string
	for name := range got {
		if !listed[name] {
			unlisted = append(unlisted, fmt.Sprintf("%s: in the archive, not listed in the manifest", name))
		}
	}
	slices.Sort(unlisted)
	return append(out, unlisted...)
}
