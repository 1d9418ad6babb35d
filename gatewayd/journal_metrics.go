package gatewayd

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gateway/gateway/sessions"
)

// registerJournalMetrics exposes the ingress journal's counters (SPEC §10):
// lines and fsyncs (per message: divide by gateway_inbound_messages_total),
// write failures, what waits, and whether its storage takes writes.
func registerJournalMetrics(reg prometheus.Registerer, j sessions.Delivery) {
	reg.MustRegister(journalCollector{j: j})
}

var (
	journalLinesDesc = prometheus.NewDesc("gateway_journal_lines_total",
		"Lines written to the ingress journal.", nil, nil)
	journalFsyncsDesc = prometheus.NewDesc("gateway_journal_fsyncs_total",
		"fsyncs of the ingress journal.", nil, nil)
	journalFailuresDesc = prometheus.NewDesc("gateway_journal_write_failures_total",
		"Journal writes that failed (disk full, I/O error).", nil, nil)
	journalPendingDesc = prometheus.NewDesc("gateway_journal_pending",
		"Accepted messages without an outcome yet.", nil, nil)
	outboxRepliesDesc = prometheus.NewDesc("gateway_outbox_replies",
		"Replies stored and not yet completely delivered.", nil, nil)
	storageHealthyDesc = prometheus.NewDesc("gateway_storage_healthy",
		"1 while the journal takes writes, 0 while its storage fails.", nil, nil)
)

// journalCollector reads the journal's stats once per scrape for all of
// its metrics: on PostgreSQL each read is a query (and waits for the
// marks handed over), and a collector per metric made five a scrape.
type journalCollector struct {
	j sessions.Delivery
}

// Describe implements prometheus.Collector.
func (c journalCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{journalLinesDesc, journalFsyncsDesc, journalFailuresDesc,
		journalPendingDesc, outboxRepliesDesc, storageHealthyDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c journalCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.j.Stats()
	ch <- prometheus.MustNewConstMetric(journalLinesDesc, prometheus.CounterValue, float64(s.Lines))
	ch <- prometheus.MustNewConstMetric(journalFsyncsDesc, prometheus.CounterValue, float64(s.Fsyncs))
	ch <- prometheus.MustNewConstMetric(journalFailuresDesc, prometheus.CounterValue, float64(s.WriteFailures))
	ch <- prometheus.MustNewConstMetric(journalPendingDesc, prometheus.GaugeValue, float64(s.Pending))
	ch <- prometheus.MustNewConstMetric(outboxRepliesDesc, prometheus.GaugeValue, float64(s.Replies))
	healthy := 1.0
	if c.j.Health() != nil {
		healthy = 0
	}
	ch <- prometheus.MustNewConstMetric(storageHealthyDesc, prometheus.GaugeValue, healthy)
}
