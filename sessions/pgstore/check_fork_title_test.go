package pgstore

import (
	"testing"
	"time"

	"github.com/gateway/gateway/sessions"
)

// TestOrphanTitleSkipsForkedCopies: a recovered orphan transcript is
// titled by the first user message that came in to its session (one with
// journal record ids), not by a forked thread's copy of its parent's
// first message.
func TestOrphanTitleSkipsForkedCopies(t *testing.T) {
	t.Parallel()
	f := newCheckFixture(t)
	k := mustKey(t, "main", "telegram", "9")
	f.begin(t, k)
	at := time.Now()
	own := sessions.UserText("the thread's own question", at)
	own.RecordIDs = []string{"tg:default:9:1"}
	answer := sessions.Message{Role: sessions.RoleAssistant, Content: []sessions.Content{{Type: sessions.BlockText, Text: "answer"}}, Timestamp: at.UnixMilli()}
	if _, err := f.transcript(t, k).Append(f.ctx, sessions.UserText("the parent's question", at), answer, own, answer); err != nil {
		t.Fatal(err)
	}
	f.exec(t, `DELETE FROM entries WHERE session_id = $1`, f.ids[k])
	ps := f.check(t)
	if errs := f.db.Repair(f.ctx, ps, sessions.CheckOptions{}); len(errs) != len(ps) {
		t.Fatalf("Repair answered %d errors for %d problems", len(errs), len(ps))
	} else {
		for _, err := range errs {
			if err != nil {
				t.Fatalf("Repair: %v", err)
			}
		}
	}
	a, err := f.st.Archived(k)
	if err != nil || len(a) != 1 {
		t.Fatalf("archived %+v, %v; want the recovered session", a, err)
	}
	if a[0].Title != "the thread's own question" {
		t.Errorf("recovered title %q, want the thread's own first message", a[0].Title)
	}
}
