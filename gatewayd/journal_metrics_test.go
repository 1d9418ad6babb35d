package gatewayd

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gateway/gateway/sessions"
)

// statsJournal counts its Stats reads; the collector calls nothing else
// of a Delivery but Health.
type statsJournal struct {
	sessions.Delivery
	reads  atomic.Int64
	health error
}

func (j *statsJournal) Stats() sessions.JournalStats {
	j.reads.Add(1)
	return sessions.JournalStats{Lines: 7, Fsyncs: 3, WriteFailures: 1, Pending: 2, Replies: 5}
}

func (j *statsJournal) Health() error { return j.health }

// A scrape reads the journal's stats once for all its metrics (each read
// is a query on PostgreSQL), and the metrics are what Stats said.
func TestJournalMetricsOneReadPerScrape(t *testing.T) {
	j := &statsJournal{health: errors.New("disk full")}
	reg := prometheus.NewPedanticRegistry()
	registerJournalMetrics(reg, j)
	want := `
# HELP gateway_journal_fsyncs_total fsyncs of the ingress journal.
# TYPE gateway_journal_fsyncs_total counter
gateway_journal_fsyncs_total 3
# HELP gateway_journal_lines_total Lines written to the ingress journal.
# TYPE gateway_journal_lines_total counter
gateway_journal_lines_total 7
# HELP gateway_journal_pending Accepted messages without an outcome yet.
# TYPE gateway_journal_pending gauge
gateway_journal_pending 2
# HELP gateway_journal_write_failures_total Journal writes that failed (disk full, I/O error).
# TYPE gateway_journal_write_failures_total counter
gateway_journal_write_failures_total 1
# HELP gateway_outbox_replies Replies stored and not yet completely delivered.
# TYPE gateway_outbox_replies gauge
gateway_outbox_replies 5
# HELP gateway_storage_healthy 1 while the journal takes writes, 0 while its storage fails.
# TYPE gateway_storage_healthy gauge
gateway_storage_healthy 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	if n := j.reads.Load(); n != 1 {
		t.Errorf("one scrape read the journal's stats %d times, want 1", n)
	}
}
