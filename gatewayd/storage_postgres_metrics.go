package gatewayd

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore"
)

// Replica metrics (issue 13): on a backend several replicas share
// (postgres), /metrics shows this replica's id, the leases it holds by
// kind (counted: a replica may hold thousands of session leases), and the
// lag of unclaimed ingress, read from the database at each scrape. The
// files backend has none of them.

// replicaScrapeTimeout bounds the database read of one scrape: a database
// that does not answer costs a scrape this long, never more.
const replicaScrapeTimeout = 2 * time.Second

// replicaStatuser is a backend shared by replicas (pgstore.Backend).
type replicaStatuser interface {
	ReplicaStatus(ctx context.Context) (pgstore.ReplicaStatus, error)
}

// registerReplicaMetrics registers the replica collector when b is shared
// by replicas; otherwise it does nothing.
func registerReplicaMetrics(reg prometheus.Registerer, b sessions.Backend, log *zap.Logger) {
	src, ok := b.(replicaStatuser)
	if !ok {
		return
	}
	reg.MustRegister(newReplicaCollector(src.ReplicaStatus, log))
}

// replicaCollector reads the replica's status at each scrape. It is safe
// for concurrent scrapes (it keeps no state).
type replicaCollector struct {
	status func(context.Context) (pgstore.ReplicaStatus, error)
	log    *zap.Logger

	info, up, leases, unclaimed, age *prometheus.Desc
}

var _ prometheus.Collector = (*replicaCollector)(nil)

func newReplicaCollector(status func(context.Context) (pgstore.ReplicaStatus, error), log *zap.Logger) *replicaCollector {
	if log == nil {
		log = zap.NewNop()
	}
	return &replicaCollector{status: status, log: log,
		info: prometheus.NewDesc("gateway_replica_info",
			"This replica's id on the shared database (always 1).", []string{"replica_id"}, nil),
		up: prometheus.NewDesc("gateway_replica_status_up",
			"1 when the scrape read the replica gauges from the database, 0 when it could not (they are then absent).", nil, nil),
		leases: prometheus.NewDesc("gateway_leases_held",
			"Leases this replica holds, by kind: leader (a Telegram poller or Discord connection per bot account) or session (a turn running).",
			[]string{"kind"}, nil),
		unclaimed: prometheus.NewDesc("gateway_ingress_unclaimed",
			"Accepted messages nobody works on: pending records whose owner died or whose lease ran out, before a replica takes them over.", nil, nil),
		age: prometheus.NewDesc("gateway_ingress_unclaimed_age_seconds",
			"Age of the oldest unclaimed accepted message (0 when there is none).", nil, nil),
	}
}

// Describe sends the descriptors of every metric the collector makes.
func (c *replicaCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.info, c.up, c.leases, c.unclaimed, c.age} {
		ch <- d
	}
}

// Collect reads the status (bounded by replicaScrapeTimeout) and sends
// the gauges; when the database does not answer, only the id and up 0.
func (c *replicaCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), replicaScrapeTimeout)
	defer cancel()
	st, err := c.status(ctx)
	if st.ReplicaID != "" {
		ch <- prometheus.MustNewConstMetric(c.info, prometheus.GaugeValue, 1, st.ReplicaID)
	}
	if err != nil {
		c.log.Warn("replica metrics: database read failed", zap.Error(err))
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(c.leases, prometheus.GaugeValue, float64(len(st.LeaderRoles)), "leader")
	ch <- prometheus.MustNewConstMetric(c.leases, prometheus.GaugeValue, float64(st.SessionLeases), "session")
	ch <- prometheus.MustNewConstMetric(c.unclaimed, prometheus.GaugeValue, float64(st.Ingress.Unclaimed))
	ch <- prometheus.MustNewConstMetric(c.age, prometheus.GaugeValue, st.Ingress.OldestAge.Seconds())
}

// opStatser is a backend that counts its database round trips and
// commits by operation (pgstore.Backend).
type opStatser interface {
	OpStats() []pgstore.OpStats
}

// registerStorageMetrics registers the round-trip and commit counters
// (issue 21: what a message costs the database, by operation) when b
// counts them; otherwise it does nothing.
func registerStorageMetrics(reg prometheus.Registerer, b sessions.Backend) {
	src, ok := b.(opStatser)
	if !ok {
		return
	}
	reg.MustRegister(newStorageCollector(src.OpStats))
}

// storageCollector reads the backend's counters at each scrape; it keeps
// no state.
type storageCollector struct {
	stats          func() []pgstore.OpStats
	trips, commits *prometheus.Desc
}

var _ prometheus.Collector = (*storageCollector)(nil)

func newStorageCollector(stats func() []pgstore.OpStats) *storageCollector {
	return &storageCollector{stats: stats,
		trips: prometheus.NewDesc("gateway_storage_roundtrips_total",
			"Database round trips (a statement, or a pipelined batch of them) by backend operation.", []string{"op"}, nil),
		commits: prometheus.NewDesc("gateway_storage_commits_total",
			"Database transactions committed (a COMMIT, a batch or a statement outside a transaction) by backend operation.",
			[]string{"op"}, nil),
	}
}

// Describe sends the descriptors of both counters.
func (c *storageCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.trips
	ch <- c.commits
}

// Collect sends both counters of every operation counted so far.
func (c *storageCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.stats() {
		ch <- prometheus.MustNewConstMetric(c.trips, prometheus.CounterValue, float64(s.RoundTrips), s.Op)
		ch <- prometheus.MustNewConstMetric(c.commits, prometheus.CounterValue, float64(s.Commits), s.Op)
	}
}
