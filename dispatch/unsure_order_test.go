package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore"
	"github.com/gateway/gateway/sessions/pgstore/pgtest"
)

// lostAnswerPG is a PostgreSQL journal (a replica's: leases, BeginTurn's
// order) whose accept of a record carrying text fails once after the
// record was committed, as when the database is cut off between the
// commit and its answer; everything else, the probe included, is the
// real journal's.
type lostAnswerPG struct {
	*pgstore.Delivery
	mu   sync.Mutex
	text string // "" once it failed
}

func (j *lostAnswerPG) Accept(ctx context.Context, rec sessions.Record) (bool, error) {
	dup, err := j.Delivery.Accept(ctx, rec)
	j.mu.Lock()
	fail := j.text != "" && containsText(string(rec.Payload), j.text)
	if fail {
		j.text = ""
	}
	j.mu.Unlock()
	if err != nil || !fail {
		return dup, err
	}
	return false, fmt.Errorf("journal accept: %w: connection lost before the answer", sessions.ErrStorage)
}

type lostAnswerBackend struct {
	*pgstore.Backend
	j *lostAnswerPG
}

func (b *lostAnswerBackend) Journal() sessions.Delivery { return b.j }

// TestStoredAfterAllRunsBeforeNewerBurst: a Telegram DM's message "n52"
// is committed by a replica that then loses the database before the
// answer, so the webhook is refused; once the database is back the update
// is delivered again (a duplicate now: answered 200) and the next one,
// "n53", is accepted and held for the sender's burst window. The resolver
// then finds n52 stored and runs it: n52 must reach the model before n53,
// once. It was joined to the burst held for n53, behind it, and the model
// got "n53\nn52" (the multi-replica test's "new [53 52 54 ...]" after an
// outage): BeginTurn's accept order sorts a batch's lane items, not the
// parts of a burst.
func TestStoredAfterAllRunsBeforeNewerBurst(t *testing.T) {
	fastUnsure(t)
	for _, backend := range []string{"postgres", "files"} {
		t.Run(backend, func(t *testing.T) {
			var (
				wrap    func(sessions.Backend) sessions.Backend
				pending func() int
			)
			switch backend {
			case "postgres":
				pg, err := pgstore.OpenBackend(context.Background(), pgstore.BackendOptions{
					Options:   pgstore.Options{URL: pgtest.NewDatabase(t), MaxConns: 6, Logger: zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))},
					ReplicaID: "r2"})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = pg.Close() })
				j := &lostAnswerPG{Delivery: pg.Journal().(*pgstore.Delivery), text: "n52"}
				wrap = func(sessions.Backend) sessions.Backend { return &lostAnswerBackend{Backend: pg, j: j} }
				pending = func() int { st := j.Stats(); return st.Pending + st.Replies }
			default:
				j := &unsureJournal{fail: map[string]bool{"n52": true}, store: true, stored: map[string]bool{}}
				wrap = func(b sessions.Backend) sessions.Backend { return &unsureBackend{Backend: b, j: j} }
			}
			m := &model{}
			h := newHarness(t, "", m, func(h *harness) { h.wrap = wrap })
			if pending == nil {
				pending = func() int { st := h.journal().Stats(); return st.Pending + st.Replies }
			}
			// A window no test run outlasts; a burst of two is queued at once.
			c := burstCfg(time.Minute, 0)
			c.MaxParts = 2
			setInbound(h, c)

			n52, n53 := in("tg", "c7", "n52"), in("tg", "c7", "n53")
			if err := h.d.Handle(h.ctx, n52); !errors.Is(err, sessions.ErrStorage) {
				t.Fatalf("Handle(n52) = %v, want the storage failure", err)
			}
			if err := h.d.Handle(h.ctx, n52); !errors.Is(err, channels.ErrDuplicate) {
				t.Fatalf("n52 delivered again: %v, want a duplicate", err)
			}
			h.handle(n53) // held for the burst window
			eventually(t, "the resolver to run n52", func() bool { return len(m.requests()) > 0 })
			h.handle(in("tg", "c7", "/status")) // queues what its sender's burst holds
			eventually(t, "every message answered", func() bool { return pending() == 0 })

			var seen []string
			for _, r := range m.requests() {
				seen = append(seen, strings.Join(lastUserTexts(r.Messages), "|"))
			}
			all := strings.Join(seen, "|")
			if strings.Count(all, "n52") != 1 || strings.Count(all, "n53") != 1 ||
				strings.Index(all, "n52") > strings.Index(all, "n53") {
				t.Errorf("the model's new inputs, turn by turn: %q; want n52 before n53, each once", seen)
			}
		})
	}
}
