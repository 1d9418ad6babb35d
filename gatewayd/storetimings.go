package gatewayd

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gateway/gateway/sessions/filestore"
)

// storeTimings registers the files backend's timing histograms and returns
// the function that feeds them (filestore.Options.Observe):
// gateway_store_lock_wait_seconds (acquiring a file lock: an index or a
// transcript, waiting for other holders included) and
// gateway_store_flush_seconds (writing a store's coalesced updates to its
// index). PostgreSQL's waits are gateway_session_lease_wait_seconds.
func storeTimings(reg prometheus.Registerer) func(string, time.Duration) {
	lockWait := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gateway_store_lock_wait_seconds",
		Help:    "Time to acquire a file lock of the files backend (index or transcript), waiting for other holders included.",
		Buckets: []float64{.0001, .0005, .001, .005, .01, .05, .1, .5, 1, 5, 10}})
	flush := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gateway_store_flush_seconds",
		Help:    "Time to write an agent's coalesced session updates to its index (files backend).",
		Buckets: []float64{.0005, .001, .005, .01, .05, .1, .5, 1, 5}})
	reg.MustRegister(lockWait, flush)
	return func(what string, d time.Duration) {
		switch what {
		case filestore.ObserveLockWait:
			lockWait.Observe(d.Seconds())
		case filestore.ObserveFlush:
			flush.Observe(d.Seconds())
		}
	}
}
