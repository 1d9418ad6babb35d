package pgstore

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/transcript"
)

// A transcript cut behind the cache and grown back to or past the seq the
// cached chain ends at (another replica restores the key from an older
// export through the transfer's import, or an operator deletes the tail
// with SQL; then the replica appends) is read again, not served from
// memory, on each path that extends the cached chain: a Context, an
// AppendLazyContext (its read runs in the append's transaction), and an
// Append whose entry lands right after the cached chain's seq (added to
// the chain as written) followed by a Context.
func TestCachedContextNoticesCutAndRegrow(t *testing.T) {
	t.Parallel()
	cuts := []struct {
		name string
		cut  func(ctx context.Context, other *DB, backup [][]byte) error
	}{
		{"import", func(ctx context.Context, other *DB, backup [][]byte) error {
			restore := sessions.KeyCopy{KeyState: sessions.KeyState{Key: "agent:main:main"},
				Transcripts: map[string][][]byte{sidA: backup}}
			return other.Transfer().ImportKey(ctx, "main", restore)
		}},
		{"operator", func(ctx context.Context, other *DB, _ [][]byte) error {
			if _, err := other.pool.Exec(ctx, `DELETE FROM transcript_entries WHERE session_id = $1 AND seq > 2`, sidA); err != nil {
				return err
			}
			_, err := other.pool.Exec(ctx, `UPDATE transcript_heads SET last_seq = 2, messages = 1,
				leaf_id = (SELECT id FROM transcript_entries WHERE session_id = $1 AND seq = 2) WHERE session_id = $1`, sidA)
			return err
		}},
	}
	reads := []struct {
		name string
		read func(ctx context.Context, tr *TranscriptLog) (sessions.Context, error)
	}{
		{"context", func(ctx context.Context, tr *TranscriptLog) (sessions.Context, error) {
			return tr.Context(ctx)
		}},
		{"append lazy context", func(ctx context.Context, tr *TranscriptLog) (sessions.Context, error) {
			_, c, err := tr.AppendLazyContext(ctx, text(sessions.RoleUser, "mine"))
			return c, err
		}},
		{"append then context", func(ctx context.Context, tr *TranscriptLog) (sessions.Context, error) {
			if _, err := tr.Append(ctx, text(sessions.RoleUser, "mine")); err != nil {
				return sessions.Context{}, err
			}
			return tr.Context(ctx)
		}},
	}
	// The cached chain ends at seq 5 (the header and four messages); the
	// cut leaves seqs 1-2 (the header and "kept"), the replica's appends bring the head to
	// 2+grow: the cached seq, or past it.
	for _, r := range reads {
		for _, c := range cuts {
			for _, grow := range []int{3, 4} {
				t.Run(fmt.Sprintf("%s/%s/grown to %d", r.name, c.name, 2+grow), func(t *testing.T) {
					t.Parallel()
					db, url := openTest(t)
					ctx := ctxT(t)
					hdr := transcript.Header{SessionKey: "agent:main:main", AgentID: "main"}
					tr, err := db.Transcript(sidA, hdr)
					if err != nil {
						t.Fatal(err)
					}
					other := openReplica(t, url)
					replica, err := other.Transcript(sidA, hdr)
					if err != nil {
						t.Fatal(err)
					}

					if _, err := tr.Append(ctx, text(sessions.RoleUser, "kept")); err != nil {
						t.Fatal(err)
					}
					backup, err := other.Transfer().ExportTranscript(ctx, "main", sessions.TranscriptRef{SessionID: sidA})
					if err != nil {
						t.Fatal(err)
					}
					if _, err := tr.Append(ctx, text(sessions.RoleAssistant, "gone 1"), text(sessions.RoleUser, "gone 2"),
						text(sessions.RoleAssistant, "gone 3")); err != nil {
						t.Fatal(err)
					}
					if _, err := tr.Context(ctx); err != nil {
						t.Fatal(err)
					}
					if cc := db.chains.get(sidA); cc == nil || cc.last != 5 {
						t.Fatalf("cached chain %+v, want one ending at seq 5", cc)
					}

					if err := c.cut(ctx, other, backup); err != nil {
						t.Fatal(err)
					}
					for i := range grow {
						if _, err := replica.Append(ctx, text(sessions.RoleAssistant, fmt.Sprintf("new %d", i))); err != nil {
							t.Fatal(err)
						}
					}

					got, err := r.read(ctx, tr)
					if err != nil {
						t.Fatal(err)
					}
					want := freshContext(t, url)
					if d := cmp.Diff(want, got); d != "" {
						t.Errorf("context after the cut differs from a fresh backend's (-fresh +got):\n%s", d)
					}
					if s := allText(got); strings.Contains(s, "gone") || !strings.Contains(s, "kept") {
						t.Errorf("context after the cut = %q; want the restored and new messages only", s)
					}
				})
			}
		}
	}
}

// openReplica opens a second DB on url: another replica, with a cache of
// its own.
func openReplica(t *testing.T, url string) *DB {
	t.Helper()
	db, err := Open(ctxT(t), Options{URL: url, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

// freshContext is session sidA's context as a backend that never read it
// rebuilds it.
func freshContext(t *testing.T, url string) sessions.Context {
	t.Helper()
	tr, err := openReplica(t, url).Transcript(sidA, transcript.Header{SessionKey: "agent:main:main", AgentID: "main"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := tr.Context(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
