package filestore

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// checkFixture is a state dir seeded through the store, closed (so the
// index is whole in sessions.json) before the test damages it.
type checkFixture struct {
	state, dir string
	keys       []routing.Key
	ids        []string // session id per key
}

// seedCheck creates one session per texts with two messages per text
// (the user's and an echo), through the store, and closes it.
func seedCheck(t *testing.T, at time.Time, texts ...[]string) *checkFixture {
	t.Helper()
	f := &checkFixture{state: t.TempDir()}
	m, err := Open(Options{StateDir: f.state, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	st := mustStore(t, m, "main")
	f.dir = st.Dir()
	ctx := context.Background()
	for i, tx := range texts {
		k := dmKey(t, "main", fmt.Sprintf("peer-%d", i))
		e, _ := mustBegin(t, st, k, sessions.Origin{Channel: "telegram", ChatType: "direct", Title: tx[0], At: at})
		tr, err := st.Transcript(e.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range tx {
			if _, err := tr.Append(ctx, sessions.UserText(s, at), assistantText("echo: "+s)); err != nil {
				t.Fatal(err)
			}
			st.AddCounters(k, sessions.Counters{Messages: 2})
		}
		f.keys = append(f.keys, k)
		f.ids = append(f.ids, e.SessionID)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *checkFixture) transcript(i int) string { return filepath.Join(f.dir, f.ids[i]+transcriptExt) }

func (f *checkFixture) index(t *testing.T) map[string]sessions.Entry {
	t.Helper()
	idx, err := ReadIndex(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// writeIndex replaces the index by hand (as a damaged or hand-edited one)
// and empties the change log.
func (f *checkFixture) writeIndex(t *testing.T, idx map[string]sessions.Entry) {
	t.Helper()
	b, err := json.Marshal(idx)
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(f.dir, indexName), b, 0o600))
	if err := os.Remove(filepath.Join(f.dir, deltaName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustCheck(t *testing.T, state string, opts sessions.CheckOptions) []sessions.Problem {
	t.Helper()
	ps, err := Check(context.Background(), state, opts)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return ps
}

// codes renders the problems' codes, sorted, e.g. "counter-lag orphan-transcript".
func codes(ps []sessions.Problem) string {
	var c []string
	for _, p := range ps {
		c = append(c, p.Code)
	}
	sort.Strings(c)
	return strings.Join(c, " ")
}

// wantCodes checks the codes of a Check and returns its problems.
func wantCodes(t *testing.T, state, want string) []sessions.Problem {
	t.Helper()
	ps := mustCheck(t, state, sessions.CheckOptions{})
	if got := codes(ps); got != want {
		t.Fatalf("Check found %q, want %q:\n%s", got, want, describe(ps))
	}
	return ps
}

func describe(ps []sessions.Problem) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "  %s %s key=%q fixable=%v: %s\n", p.Code, p.Path, p.Key, p.Fixable, p.Message)
	}
	return b.String()
}

// repairAll repairs ps, wants every fixable problem fixed, and wants the
// state clean afterwards.
func repairAll(t *testing.T, state string, ps []sessions.Problem) {
	t.Helper()
	errs := Repair(context.Background(), state, ps, sessions.CheckOptions{})
	if len(errs) != len(ps) {
		t.Fatalf("Repair returned %d results for %d problems", len(errs), len(ps))
	}
	for i, err := range errs {
		if ps[i].Fixable && err != nil {
			t.Errorf("repair of %s %s: %v", ps[i].Code, ps[i].Path, err)
		}
		if !ps[i].Fixable && !errors.Is(err, sessions.ErrNotFixable) {
			t.Errorf("repair of unfixable %s: %v, want ErrNotFixable", ps[i].Code, err)
		}
	}
	wantCodes(t, state, "")
}

// writeTranscript writes a transcript by hand (header and one user message
// per text, chained), as another tool or an older release would.
func writeTranscript(t *testing.T, dir, id, key string, at time.Time, texts ...string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, `{"type":"session","version":3,"id":%q,"timestamp":%q,"cwd":"/","sessionKey":%q,"agentId":"main"}`+"\n",
		id, at.UTC().Format(time.RFC3339), key)
	parent := "null"
	for i, s := range texts {
		ts := at.Add(time.Duration(i) * time.Minute)
		eid := fmt.Sprintf("%08x", i+1)
		fmt.Fprintf(&b, `{"type":"message","id":%q,"parentId":%s,"timestamp":%q,"message":{"role":"user","content":[{"type":"text","text":%q}],"timestamp":%d}}`+"\n",
			eid, parent, ts.UTC().Format(time.RFC3339Nano), s, ts.UnixMilli())
		parent = `"` + eid + `"`
	}
	path := filepath.Join(dir, id+transcriptExt)
	must(t, os.WriteFile(path, []byte(b.String()), 0o600))
	return path
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func fileHash(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}
