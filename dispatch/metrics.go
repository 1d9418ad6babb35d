package dispatch

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gateway/gateway/lanes"
	"github.com/gateway/gateway/sessions"
)

// Label values the dispatcher counts by, known in advance: Init creates
// their series at zero, so an alert on a rate works from the first scrape
// instead of waiting for the first event.
const (
	// Reasons a message or reply is given up (gateway_messages_given_up_total).
	GiveUpFailures   = "failures"   // its turn failed messages.delivery.maxFailures times
	GiveUpSend       = "send"       // the platform refused the reply for good
	GiveUpUnreadable = "unreadable" // its stored form cannot be read
	GiveUpNoChannel  = "no_channel" // its channel is no longer configured
	// ResetManual is the reset reason of /new and /reset.
	ResetManual = "manual"
	// Causes of a reply chunk sent again (gateway_outbound_uncertain_total).
	UncertainRetry  = "retry"
	UncertainResume = "resume"
)

// Metrics are the dispatcher's Prometheus collectors (SPEC §10).
type Metrics struct {
	Inbound    *prometheus.CounterVec
	Outbound   *prometheus.CounterVec
	SendErrors *prometheus.CounterVec
	Refused    *prometheus.CounterVec
	Duplicates *prometheus.CounterVec
	RunLatency *prometheus.HistogramVec
	LaneWait   *prometheus.HistogramVec
	QueueDepth prometheus.Gauge
	// QueueDepths observes a session's queue depth at each message.
	QueueDepths prometheus.Histogram
	Resets      *prometheus.CounterVec
	Compactions prometheus.Counter
	Replayed    prometheus.Counter
	// Resent counts outbox replies resumed at start; GivenUp messages and
	// replies given up (by reason); StorageErrors turns and messages
	// refused or parked because the disk failed.
	Resent        prometheus.Counter
	GivenUp       *prometheus.CounterVec
	StorageErrors prometheus.Counter
	// DraftCalls counts streaming draft calls (post, edit, delete) by channel.
	DraftCalls *prometheus.CounterVec
	// LeaseWaits observes how long batches waited for their session's
	// lease held by another replica; LeasesLost counts turns stopped
	// because their lease was lost (turnlease.go).
	LeaseWaits prometheus.Histogram
	LeasesLost prometheus.Counter
	// UnsureStored counts refused messages found stored after all and
	// run (unsure.go).
	UnsureStored prometheus.Counter
	// MessageTool counts the message tool's actions by channel, action and
	// result (ok, refused by the gateway, failed at the platform).
	MessageTool *prometheus.CounterVec
	// Uncertain counts reply chunks sent again although an earlier
	// attempt may have been posted, by channel and cause (outbox.go).
	Uncertain *prometheus.CounterVec
	// Ambient counts ambient rooms' batches by outcome (ambient.go).
	Ambient *prometheus.CounterVec
}

// NewMetrics creates the collectors and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Inbound: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_inbound_messages_total", Help: "Inbound messages by channel.",
		}, []string{"channel"}),
		Outbound: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_outbound_messages_total", Help: "Replies delivered by channel.",
		}, []string{"channel"}),
		SendErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_outbound_errors_total", Help: "Replies that could not be delivered.",
		}, []string{"channel"}),
		Refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_inbound_refused_total", Help: "Inbound messages refused by the access policy.",
		}, []string{"channel"}),
		Duplicates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_inbound_duplicates_total", Help: "Redelivered inbound messages dropped.",
		}, []string{"channel"}),
		RunLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gateway_run_seconds", Help: "Agent turn latency.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
		}, []string{"agent"}),
		LaneWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gateway_lane_wait_seconds", Help: "Time a batch waited for a lane slot.",
			Buckets: []float64{.001, .005, .01, .05, .1, .5, 1, 2, 5, 10, 30},
		}, []string{"class"}),
		QueueDepth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gateway_queue_depth_last", Help: "Queue depth of the last session that received a message (deprecated: gateway_queue_depth and gateway_queue_depth_max describe every session).",
		}),
		QueueDepths: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "gateway_queue_depth", Help: "Messages waiting in a session's queue just after a message joined it (0: it ran at once).",
			Buckets: []float64{0, 1, 2, 3, 5, 10, 20, 50},
		}),
		Resets: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_session_resets_total", Help: "Session resets by reason.",
		}, []string{"reason"}),
		Compactions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_compactions_requested_total", Help: "Compactions requested with /compact.",
		}),
		Replayed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_ingress_replayed_total", Help: "Journaled messages resumed at start.",
		}),
		Resent: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_outbox_resumed_total", Help: "Outbox replies resumed at start.",
		}),
		GivenUp: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_messages_given_up_total", Help: "Messages or replies given up, by reason.",
		}, []string{"reason"}),
		StorageErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_storage_errors_total", Help: "Messages refused and turns parked because storage failed.",
		}),
		DraftCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_draft_calls_total", Help: "Streaming draft calls (post, edit, delete) by channel.",
		}, []string{"channel", "op"}),
		LeaseWaits: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "gateway_session_lease_wait_seconds", Help: "Time a batch waited for its session while another replica ran it.",
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2, 5, 10, 30},
		}),
		LeasesLost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_session_leases_lost_total", Help: "Turns stopped because their session lease was lost (the replica paused or lost the database).",
		}),
		UnsureStored: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_ingress_unsure_stored_total", Help: "Messages whose journal write failed but which were stored after all, and were run.",
		}),
		MessageTool: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_message_tool_actions_total", Help: "Message tool actions by channel, action and result (ok, refused, failed).",
		}, []string{"channel", "action", "result"}),
		Uncertain: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_outbound_uncertain_total",
			Help: "Reply chunks sent again although an earlier attempt may have been posted: after a send whose outcome is unknown (cause retry), or resumed from the outbox after a restart or take-over (cause resume). On Telegram each may show a chunk twice; Discord's nonce makes it none.",
		}, []string{"channel", "cause"}),
		Ambient: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_ambient_batches_total",
			Help: "Batches of ambient rooms' unaddressed messages by outcome (batches a lane joined into one turn count each): silent, spoke (the message tool posted), hourly_cap, throttled, empty (an addressed turn took them), failed.",
		}, []string{"outcome"}),
	}
	if reg != nil {
		reg.MustRegister(m.Inbound, m.Outbound, m.SendErrors, m.Refused, m.Duplicates, m.RunLatency,
			m.LaneWait, m.QueueDepth, m.QueueDepths, m.Resets, m.Compactions, m.Replayed,
			m.Resent, m.GivenUp, m.StorageErrors, m.DraftCalls, m.LeaseWaits, m.LeasesLost, m.UnsureStored)
		reg.MustRegister(m.MessageTool, m.Uncertain, m.Ambient)
	}
	return m
}

// Init creates at zero the series of every label value known in advance:
// the message counters of each channel, the given-up reasons, the lane
// classes, the reset reasons and the causes of uncertain sends.
func (m *Metrics) Init(channels []string) {
	for _, ch := range channels {
		for _, v := range []*prometheus.CounterVec{m.Inbound, m.Outbound, m.SendErrors, m.Refused, m.Duplicates} {
			v.WithLabelValues(ch)
		}
		for _, c := range []string{UncertainRetry, UncertainResume} {
			m.Uncertain.WithLabelValues(ch, c)
		}
	}
	for _, o := range []string{AmbientSilent, AmbientSpoke, AmbientHourlyCap, AmbientThrottled, AmbientEmpty, AmbientFailed} {
		m.Ambient.WithLabelValues(o)
	}
	for _, r := range []string{GiveUpFailures, GiveUpSend, GiveUpUnreadable, GiveUpNoChannel} {
		m.GivenUp.WithLabelValues(r)
	}
	for _, c := range []lanes.Class{lanes.ClassMain, lanes.ClassSubagent} {
		m.LaneWait.WithLabelValues(string(c))
	}
	for _, r := range []string{ResetManual, sessions.ReasonDaily, sessions.ReasonIdle} {
		m.Resets.WithLabelValues(r)
	}
}
