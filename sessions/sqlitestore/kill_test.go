package sqlitestore

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
)

// killHelperEnv names the database a helper process (TestMain) writes
// until it is killed.
const killHelperEnv = "SQLITESTORE_KILL_HELPER_DB"

// killSession is the session whose transcript the helper appends to.
const killSession = "00000000-0000-4000-8000-00000000cafe"

func TestMain(m *testing.M) {
	if path := os.Getenv(killHelperEnv); path != "" {
		os.Exit(killHelper(path, os.Getenv("SQLITESTORE_KILL_HELPER_ROUND")))
	}
	os.Exit(m.Run())
}

// killHelper writes the database at path as the daemon does — accepts
// (durable), transcript appends of large messages (durable, with search
// words), replies stored and marked (lazy), their records done — and
// prints each accept and append once it returned, until it is killed.
func killHelper(path, round string) int {
	ctx := context.Background()
	db, err := Open(ctx, Options{Path: path})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	d := db.Delivery()
	tr, err := db.Transcript(killSession, transcript.Header{AgentID: "main"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	out := bufio.NewWriter(os.Stdout)
	big := strings.Repeat("many words of a long message ", 2000) // ~58 KB: the WAL checkpoints often
	for i := 0; ; i++ {
		id := fmt.Sprintf("k%s-%d", round, i)
		if _, err := d.Accept(ctx, sessions.Record{ID: id, Payload: json.RawMessage(`{"text":"hi"}`)}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Fprintf(out, "accepted %s\n", id)
		_ = out.Flush()
		ids, err := tr.Append(ctx, sessions.Message{Role: sessions.RoleUser,
			Content: []sessions.Content{{Type: sessions.BlockText, Text: id + " " + big}}})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Fprintf(out, "appended %s\n", ids[0])
		_ = out.Flush()
		rp := sessions.Reply{ID: "re" + id, Records: []string{id}, Chunks: []string{"a", "b"}}
		if err := d.Ready(rp); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		_ = d.Sent(rp.ID, 1)
		_ = d.Sent(rp.ID, 2)
	}
}

// A process killed (SIGKILL) at any instant of its writes leaves a
// database that opens, passes SQLite's integrity check, and holds every
// record whose Accept returned and every entry whose Append returned
// (SPEC §3.7: nothing accepted is lost). Rounds of kills at random points
// on one file, each reopening what the last left.
func TestKilledWriterLosesNothingAccepted(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var accepted, appended []string
	for round := range 8 {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), killHelperEnv+"="+path, fmt.Sprintf("SQLITESTORE_KILL_HELPER_ROUND=%d", round))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(stdout)
		killAt := 2 + rand.IntN(60)
		for n := 0; n < killAt && lines.Scan(); n++ {
			kind, id, _ := strings.Cut(lines.Text(), " ")
			if kind == "accepted" {
				accepted = append(accepted, id)
			} else {
				appended = append(appended, id)
			}
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		for lines.Scan() { // what it printed before the signal landed
			kind, id, _ := strings.Cut(lines.Text(), " ")
			if kind == "accepted" {
				accepted = append(accepted, id)
			} else {
				appended = append(appended, id)
			}
		}
		_ = cmd.Wait()
		if stderr.Len() > 0 {
			t.Fatalf("round %d: helper failed: %s", round, stderr.String())
		}
		checkAfterKill(t, path, round, accepted, appended)
	}
}

func checkAfterKill(t *testing.T, path string, round int, accepted, appended []string) {
	t.Helper()
	db, err := Open(context.Background(), Options{Path: path})
	if err != nil {
		t.Fatalf("round %d: the database does not open after the kill: %v", round, err)
	}
	defer db.Close()
	var check string
	if err := db.read.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("round %d: integrity check %q %v", round, check, err)
	}
	for _, id := range accepted {
		var n int
		if err := db.read.QueryRow(`SELECT count(*) FROM journal WHERE id = ?`, id).Scan(&n); err != nil || n != 1 {
			t.Errorf("round %d: accepted record %s lost (%d rows, %v)", round, id, n, err)
		}
	}
	for _, id := range appended {
		var n int
		if err := db.read.QueryRow(`SELECT count(*) FROM transcript_entries WHERE session_id = ? AND id = ?`, killSession, id).Scan(&n); err != nil || n != 1 {
			t.Errorf("round %d: appended entry %s lost (%d rows, %v)", round, id, n, err)
		}
	}
	tr, err := db.Transcript(killSession, transcript.Header{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Context(context.Background()); err != nil {
		t.Errorf("round %d: transcript does not load: %v", round, err)
	}
}
