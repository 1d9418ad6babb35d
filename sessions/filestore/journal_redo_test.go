package filestore

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
)

// redoFixture is a daemon-like manager: the journal opened before the
// transcripts, so durable appends go through redo lines.
type redoFixture struct {
	dir string
	m   *Manager
	s   *Store
}

func openRedoFixture(t *testing.T, dir string) *redoFixture {
	t.Helper()
	m := openTestManager(t, dir, Options{})
	if err := m.Journal().Health(); err != nil {
		t.Fatal(err)
	}
	return &redoFixture{dir: dir, m: m, s: mustStore(t, m, "main")}
}

// session begins the session of peer and returns its transcript's path and
// a durable append of texts (each a user message and a reply).
func (f *redoFixture) session(t *testing.T, peer string) (string, func(texts ...string)) {
	t.Helper()
	ctx := context.Background()
	e, _, err := f.s.Begin(ctx, dmKey(t, "main", peer), sessions.Origin{Channel: "telegram"})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := f.s.TranscriptOf(e)
	if err != nil {
		t.Fatal(err)
	}
	return tr.Path(), func(texts ...string) {
		t.Helper()
		for _, txt := range texts {
			// A turn: the input lazily, the reply durably.
			if _, err := tr.AppendLazy(ctx, sessions.UserText("q-"+txt, time.Now())); err != nil {
				t.Fatal(err)
			}
			if _, err := tr.Append(ctx, replyText(txt)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// redoLines reads the redo lines of the journal file in dir.
func redoLines(t *testing.T, dir string) []journalLine {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "ingress", "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []journalLine
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var l journalLine
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Op == "redo" {
			out = append(out, l)
		}
	}
	return out
}

// TestRedoRestoresTranscriptAfterPowerLoss: a turn's durable append costs
// the transcript no fsync after the file's first one (the journal holds
// the bytes); a start after the transcript lost or tore any of the bytes
// after its last fsync (a power loss) restores every acknowledged line, at
// every cut point.
func TestRedoRestoresTranscriptAfterPowerLoss(t *testing.T) {
	dir := t.TempDir()
	f := openRedoFixture(t, dir)
	path, turn := f.session(t, "alice")
	turn("a1", "a2", "a3", "a4")
	if err := f.m.Close(); err != nil {
		t.Fatal(err)
	}
	ls := redoLines(t, dir)
	// The first reply fsyncs the file (the journal did not know its durable
	// end); the three after it are redo lines.
	if len(ls) != 3 {
		t.Fatalf("%d redo lines, want 3", len(ls))
	}
	rel, _ := filepath.Rel(dir, path)
	if ls[0].Path != filepath.ToSlash(rel) {
		t.Fatalf("redo path %q, want %q", ls[0].Path, rel)
	}
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	floor := ls[0].Off
	for i := 1; i < len(ls); i++ {
		if ls[i].Off != ls[i-1].Off+int64(len(ls[i-1].Data)) {
			t.Fatalf("redo line %d starts at %d, the one before ends at %d", i, ls[i].Off, ls[i-1].Off+int64(len(ls[i-1].Data)))
		}
	}
	if end := ls[2].Off + int64(len(ls[2].Data)); end != int64(len(whole)) || !bytes.Equal([]byte(ls[0].Data+ls[1].Data+ls[2].Data), whole[floor:]) {
		t.Fatalf("the redo lines do not hold the transcript's bytes after offset %d", floor)
	}
	journal := filepath.Join(dir, "ingress", "journal.jsonl")
	jb, err := os.ReadFile(journal)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"q-a1", "a1", "q-a2", "a2", "q-a3", "a3", "q-a4", "a4"}
	step := max(1, (len(whole)-int(floor))/40)
	for cut := int(floor); cut <= len(whole); cut += step {
		for _, damage := range []string{"cut", "torn", "garbage"} {
			t.Run(fmt.Sprintf("%s@%d", damage, cut), func(t *testing.T) {
				b := bytes.Clone(whole[:cut])
				switch damage {
				case "torn":
					b = append(b, `{"type":"message","id":"dead`...)
				case "garbage": // same length, other bytes (pages never written)
					b = append(b, bytes.Repeat([]byte{0}, len(whole)-cut)...)
				}
				if err := os.WriteFile(path, b, 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(journal, jb, 0o600); err != nil {
					t.Fatal(err)
				}
				f := openRedoFixture(t, dir)
				got, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, whole) {
					t.Fatalf("transcript after the start is %d bytes, want the %d written", len(got), len(whole))
				}
				if texts := historyTexts(t, path); fmt.Sprint(texts) != fmt.Sprint(want) {
					t.Fatalf("history %v, want %v", texts, want)
				}
				// The start fsynced the file and rewrote the journal without
				// the redo lines.
				if n := len(redoLines(t, dir)); n != 0 {
					t.Fatalf("%d redo lines left after the start", n)
				}
				if err := f.m.Close(); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestRedoSkipsTranscriptsGoneOrReplaced: a redo line never brings back a
// deleted transcript, nor writes into a file that replaced its own
// (doctor --fix rewrites a transcript atomically).
func TestRedoSkipsTranscriptsGoneOrReplaced(t *testing.T) {
	dir := t.TempDir()
	f := openRedoFixture(t, dir)
	gone, turnGone := f.session(t, "gone")
	replaced, turnReplaced := f.session(t, "replaced")
	turnGone("g1", "g2")
	turnReplaced("r1", "r2")
	if err := f.m.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(redoLines(t, dir)); n != 2 {
		t.Fatalf("%d redo lines, want 2", n)
	}
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(replaced)
	if err != nil {
		t.Fatal(err)
	}
	short := b[:bytes.IndexByte(b, '\n')+1] // the header alone
	if err := writeFileAtomic(replaced, short); err != nil {
		t.Fatal(err)
	}
	f = openRedoFixture(t, dir)
	defer f.m.Close()
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Fatalf("deleted transcript: stat %v, want not there", err)
	}
	if got, _ := os.ReadFile(replaced); !bytes.Equal(got, short) {
		t.Fatalf("replaced transcript written to: %d bytes, want %d", len(got), len(short))
	}
}

// TestRedoCheckpointBoundsJournal: once the redo lines pass their bound,
// the transcripts behind them are fsynced and the journal is rewritten
// without them; the journal stays bounded however many turns run.
func TestRedoCheckpointBoundsJournal(t *testing.T) {
	dir := t.TempDir()
	f := openRedoFixture(t, dir)
	j := f.m.Journal()
	j.mu.Lock()
	j.redoMax, j.compactMin = 8<<10, 4<<10
	j.mu.Unlock()
	var turns []func(...string)
	for i := range 4 {
		_, turn := f.session(t, fmt.Sprintf("p%d", i))
		turns = append(turns, turn)
	}
	journal := filepath.Join(dir, "ingress", "journal.jsonl")
	var biggest int64
	for i := range 300 {
		turns[i%4](fmt.Sprintf("reply %d %s", i, bytes.Repeat([]byte("x"), 200)))
		if i%20 == 19 {
			j.checkpoint(false) // what the loop does every second
		}
		if fi, err := os.Stat(journal); err == nil {
			biggest = max(biggest, fi.Size())
		}
	}
	j.mu.Lock()
	pending := j.redo.pending
	j.mu.Unlock()
	if pending > 2*j.redoMax {
		t.Errorf("%d bytes of redo lines pending, bound %d", pending, j.redoMax)
	}
	// 300 turns wrote about 150 KB of redo lines; the journal never held
	// more than a few bounds' worth.
	if biggest > 64<<10 {
		t.Errorf("journal grew to %d bytes", biggest)
	}
	if err := f.m.Close(); err != nil {
		t.Fatal(err)
	}
}

func replyText(text string) sessions.Message {
	return sessions.Message{Role: sessions.RoleAssistant, Timestamp: time.Now().UnixMilli(),
		Content: []sessions.Content{{Type: sessions.BlockText, Text: text}}, StopReason: "stop"}
}
