package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gateway/gateway/configs"
)

// compareStateDirs runs the migration's verification between two state
// dirs (verifyMigration: counts, every key's state and transcript lines,
// `sessions show KEY --context --json` of every session, the journal's
// pending work, pairing, cursors, room history) and fails on any
// difference.
func compareStateDirs(t *testing.T, a, b string) string {
	t.Helper()
	cfg, err := configs.LoadBytes([]byte("stateDir: "+a+"\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	sa, err := openFilesSide(cfg, migrateFlags{stateDir: a}, false, newDirLocks())
	if err != nil {
		t.Fatal(err)
	}
	defer sa.close()
	sb, err := openFilesSide(cfg, migrateFlags{stateDir: b}, false, newDirLocks())
	if err != nil {
		t.Fatal(err)
	}
	defer sb.close()
	var out bytes.Buffer
	if err := verifyMigration(context.Background(), &out, sa, sb, 2); err != nil {
		t.Fatalf("restored state differs from the original: %v\n%s", err, out.String())
	}
	return out.String()
}

// TestBackupRoundTrip backs up a state dir with sessions (current and
// archived, stress keys and texts), work in flight, pairing, cursors and
// room history, verifies the archive and restores it into a new state dir:
// every session shows the same (`sessions show --context --json`), and so
// does everything else the migration's verification compares. A second
// restore into the now non-empty dir is refused unless --force, which
// keeps the replaced state beside it.
func TestBackupRoundTrip(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "state")
	built := buildFilesState(t, src)
	cfg := writeConfig(t, src, "", "")
	archive := filepath.Join(root, "b.tar.gz")

	r := gw(t, cfg, "backup", "create", archive).want(t, 0)
	if !strings.Contains(r.Stdout, "backup create: ") {
		t.Fatalf("create output: %s", r.Stdout)
	}
	if fi, err := os.Stat(archive); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("archive: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	gw(t, cfg, "backup", "create", archive).want(t, 1) // exists: refused without --force
	r = gw(t, cfg, "backup", "create", filepath.Join(src, "inside.tar.gz")).want(t, 2)
	if !strings.Contains(r.Stderr, "inside the state dir") {
		t.Fatalf("archive inside the state dir: %s", r.Stderr)
	}
	r = gw(t, cfg, "backup", "verify", archive).want(t, 0)
	if !strings.Contains(r.Stdout, "good (") {
		t.Fatalf("verify output: %s", r.Stdout)
	}

	dst := filepath.Join(root, "restored", "state")
	r = gw(t, cfg, "backup", "restore", archive, "--state-dir", dst).want(t, 0)
	t.Logf("%s", r.Stdout)
	out := compareStateDirs(t, src, dst)
	if !strings.Contains(out, "identical for ") {
		t.Fatalf("verification output: %s", out)
	}
	t.Logf("%d current sessions, %d deleted keys: %s", len(built.Current), len(built.Deleted), out)
	if fi, err := os.Stat(dst); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("restored dir: %v, want mode 0700", err)
	}

	// Not empty now: refused, then replaced with --force.
	r = gw(t, cfg, "backup", "restore", archive, "--state-dir", dst).want(t, 1)
	if !strings.Contains(r.Stderr, "is not empty") || !strings.Contains(r.Stderr, "--force") {
		t.Fatalf("restore into a non-empty dir: %s", r.Stderr)
	}
	marker := filepath.Join(dst, "marker")
	must(t, os.WriteFile(marker, []byte("old"), 0o600))
	gw(t, cfg, "backup", "restore", archive, "--state-dir", dst, "--force").want(t, 0)
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the replaced state leaked into the restored one: %v", err)
	}
	kept, _ := filepath.Glob(dst + ".pre-restore-*")
	if len(kept) != 1 {
		t.Fatalf("kept old states %v, want one", kept)
	}
	if b, err := os.ReadFile(filepath.Join(kept[0], "marker")); err != nil || string(b) != "old" {
		t.Fatalf("the replaced state was not kept: %q %v", b, err)
	}
	compareStateDirs(t, src, dst)
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(dst), ".state.restore-*")); len(left) > 0 {
		t.Fatalf("staging dirs left behind: %v", left)
	}
}

// rewriteArchive copies the archive at src to dst, passing each entry's
// content through edit (which may return it changed).
func rewriteArchive(t *testing.T, src, dst string, edit func(name string, b []byte) []byte) {
	t.Helper()
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	gw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gw)
	tr := tar.NewReader(gr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		b = edit(h.Name, b)
		h.Size = int64(len(b))
		must(t, tw.WriteHeader(h))
		if _, err := tw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	must(t, tw.Close())
	must(t, gw.Close())
	must(t, os.WriteFile(dst, buf.Bytes(), 0o600))
}

// TestBackupVerifyRefusesDamage: an archive whose transcript changed after
// it was made (checksum), one cut short, and one made from a state with a
// transcript line that does not parse are each refused by verify and by
// restore, with the file and what is wrong named; restore changes nothing.
func TestBackupVerifyRefusesDamage(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "state")
	buildFilesState(t, src)
	cfg := writeConfig(t, src, "", "")
	good := filepath.Join(root, "good.tar.gz")
	gw(t, cfg, "backup", "create", good).want(t, 0)

	var changed string
	flipped := filepath.Join(root, "flipped.tar.gz")
	rewriteArchive(t, good, flipped, func(name string, b []byte) []byte {
		if changed == "" && strings.HasSuffix(name, ".jsonl") && strings.HasPrefix(name, "agents/") && len(b) > 10 {
			changed = name
			return bytes.Replace(b, []byte(`"role":"user"`), []byte(`"role":"usEr"`), 1)
		}
		return b
	})
	whole, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(root, "truncated.tar.gz")
	must(t, os.WriteFile(truncated, whole[:len(whole)*2/3], 0o600))
	noManifest := filepath.Join(root, "nomanifest.tar.gz")
	rewriteArchive(t, good, noManifest, func(name string, b []byte) []byte {
		if name == backupManifestName {
			return []byte(`{"format":"something else"}`)
		}
		return b
	})

	// A state whose archived transcript holds a line that does not parse.
	bad := filepath.Join(root, "bad")
	buildFilesState(t, bad)
	archived, _ := filepath.Glob(filepath.Join(bad, "agents", "*", "sessions", "*.jsonl.*.*"))
	if len(archived) == 0 {
		t.Fatal("the built state has no archived transcript")
	}
	af, err := os.OpenFile(archived[0], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = af.WriteString("{not json\n")
	must(t, err)
	must(t, af.Close())
	badLine := filepath.Join(root, "badline.tar.gz")
	gw(t, writeConfig(t, bad, "", ""), "backup", "create", badLine).want(t, 0)

	for _, tc := range []struct {
		name, path string
		want       []string
	}{
		{"changed transcript", flipped, []string{changed, "checksum mismatch"}},
		{"truncated", truncated, []string{"not a readable gateway backup"}},
		{"foreign manifest", noManifest, []string{"format \"something else\""}},
		{"unparsable archived transcript", badLine, []string{"transcript-bad-line", filepath.Base(archived[0])}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := gw(t, cfg, "backup", "verify", tc.path).want(t, 1)
			all := r.Stdout + r.Stderr
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Fatalf("verify output lacks %q:\n%s", w, all)
				}
			}
			dst := filepath.Join(t.TempDir(), "state")
			r = gw(t, cfg, "backup", "restore", tc.path, "--state-dir", dst).want(t, 1)
			if _, err := os.Stat(dst); !os.IsNotExist(err) {
				t.Fatalf("a refused restore created %s: %v", dst, err)
			}
			if left, _ := filepath.Glob(filepath.Join(filepath.Dir(dst), ".state.restore-*")); len(left) > 0 {
				t.Fatalf("staging dirs left behind: %v", left)
			}
		})
	}
}

// TestBackupBesideRunningDaemon takes a backup of a daemon's state dir
// while it runs and answers chats, restores it into a new dir (the
// transcripts come out as the daemon wrote them), and is refused
// restoring into the daemon's own dir even with --force, which then
// stays untouched.
func TestBackupBesideRunningDaemon(t *testing.T) {
	state := t.TempDir()
	must(t, os.Chmod(state, 0o700))
	addr := startFromFile(t, writeYAML(t, reloadYAML(state, "")))
	cfg := writeConfig(t, state, addr, "")
	_, sid := chat(t, addr, "", "first message")
	chat(t, addr, sid, "second message")

	archive := filepath.Join(t.TempDir(), "live.tar.gz")
	gw(t, cfg, "backup", "create", archive).want(t, 0)
	chat(t, addr, sid, "after the backup")

	before, err := os.ReadFile(filepath.Join(state, "agents", "main", "sessions", sid+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	r := gw(t, cfg, "backup", "restore", archive, "--force").want(t, 1)
	if !strings.Contains(r.Stderr, "refused") || !strings.Contains(r.Stderr, "another gateway (pid ") {
		t.Fatalf("restore beside the daemon: %s", r.Stderr)
	}
	after, err := os.ReadFile(filepath.Join(state, "agents", "main", "sessions", sid+".jsonl"))
	if err != nil || !bytes.Equal(before, after) {
		t.Fatalf("a refused restore changed the daemon's transcript (%v)", err)
	}

	dst := filepath.Join(t.TempDir(), "state")
	gw(t, cfg, "backup", "restore", archive, "--state-dir", dst).want(t, 0)
	got, err := os.ReadFile(filepath.Join(dst, "agents", "main", "sessions", sid+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(after, got) || !strings.Contains(string(got), "second message") || strings.Contains(string(got), "after the backup") {
		t.Fatalf("restored transcript is not the daemon's as of the backup:\n%s", got)
	}
	// A daemon starts on the restored dir and continues the session.
	addr2 := startFromFile(t, writeYAML(t, reloadYAML(dst, "")))
	if reply, got := chat(t, addr2, sid, "on the restored state"); got != sid || !strings.Contains(reply, "on the restored state") {
		t.Fatalf("the restored daemon answered %q in session %s, want session %s", reply, got, sid)
	}
}
