package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gateway/gateway/sessions"
)

// registerJournalMetrics exposes the ingress journal's counters (SPEC §10):
// lines and fsyncs (per message: divide by gateway_inbound_messages_total),
// write failures, what waits, and whether its storage takes writes.
func registerJournalMetrics(reg prometheus.Registerer, j *sessions.Journal) {
	stat := func(f func(sessions.JournalStats) float64) func() float64 {
		return func() float64 { return f(j.Stats()) }
	}
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "gateway_journal_lines_total",
			Help: "Lines written to the ingress journal."}, stat(func(s sessions.JournalStats) float64 { return float64(s.Lines) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "gateway_journal_fsyncs_total",
			Help: "fsyncs of the ingress journal."}, stat(func(s sessions.JournalStats) float64 { return float64(s.Fsyncs) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "gateway_journal_write_failures_total",
			Help: "Journal writes that failed (disk full, I/O error)."}, stat(func(s sessions.JournalStats) float64 { return float64(s.WriteFailures) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "gateway_journal_pending",
			Help: "Accepted messages without an outcome yet."}, stat(func(s sessions.JournalStats) float64 { return float64(s.Pending) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "gateway_outbox_replies",
			Help: "Replies stored and not yet completely delivered."}, stat(func(s sessions.JournalStats) float64 { return float64(s.Replies) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "gateway_storage_healthy",
			Help: "1 while the journal takes writes, 0 while its storage fails."}, func() float64 {
			if j.Health() != nil {
				return 0
			}
			return 1
		}),
	)
}
