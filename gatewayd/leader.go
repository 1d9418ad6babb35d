package gatewayd

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
)

// Singletons across replicas (issue 13): on a backend several replicas
// share (postgres), Telegram long polling and each Discord gateway
// connection run on one replica per bot account, the holder of the
// account's leader lease ("telegram:<account>", "discord:<account>"). The
// others stand by and take over when the leader stops (at once: it
// releases its lease) or dies (when its lease expires). Telegram in
// webhook mode and the web chat run on every replica. On the files backend
// there is one daemon per state directory and nothing changes.

// leaderRunner is a backend shared by several replicas: it runs a function
// while this replica holds the named leader role (pgstore.Backend).
type leaderRunner interface {
	RunLeader(ctx context.Context, name string, fn func(context.Context) error) error
	ReplicaID() string
}

// runAdapter runs a until ctx ends: under its leader role when it is a
// singleton on a shared backend, else directly.
func (d *Daemon) runAdapter(ctx context.Context, a channels.Adapter) error {
	role, single := singletonRole(a)
	lr, shared := d.backend.(leaderRunner)
	if !single || !shared {
		return a.Run(ctx, d.disp.Handle)
	}
	log := d.log.With(zap.String("channel", a.Name()), zap.String("account_id", a.AccountID()),
		zap.String("role", role), zap.String("replica_id", lr.ReplicaID()))
	leading := d.leaderGauge().WithLabelValues(role, lr.ReplicaID())
	leading.Set(0)
	as := d.adapterStates.of(channels.AccountOf(a))
	as.mu.Lock()
	as.role = role
	as.mu.Unlock()
	log.Info("channel adapter waits for its leader role")
	return lr.RunLeader(ctx, role, func(ctx context.Context) error {
		log.Info("channel adapter leads: starting")
		leading.Set(1)
		as.leading.Store(true)
		defer leading.Set(0)
		defer as.leading.Store(false)
		err := a.Run(ctx, d.disp.Handle)
		log.Info("channel adapter stopped leading")
		return err
	})
}

// leaderGauge is gateway_leader_role on the daemon's registry: 1 while
// this replica leads a role, 0 while it stands by.
func (d *Daemon) leaderGauge() *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gateway_leader_role",
		Help: "1 while this replica holds the leader role (one Telegram poller or Discord connection per bot account), 0 while it stands by."},
		[]string{"role", "replica_id"})
	if err := d.reg.Register(g); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			return are.ExistingCollector.(*prometheus.GaugeVec)
		}
		d.log.Warn("leader metric not registered", zap.Error(err))
	}
	return g
}

// singletonRole is the leader role an adapter needs to run, if any, as its
// channel's row says (channelRow.leaderRole): one Telegram poller per bot,
// one Discord gateway connection per bot.
func singletonRole(a channels.Adapter) (string, bool) {
	if ch := channelOf(a.Name()); ch != nil && ch.leaderRole != nil {
		return ch.leaderRole(a)
	}
	return "", false
}
