package main

import (
	"go.uber.org/zap"

	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/pgstore"
)

// configPostgresURL is the config's storage.postgres URL (urlFile already
// read into it); "" when the config names no server.
func configPostgresURL(cfg *configs.Config) string { return cfg.Storage.Postgres.URL }

// filesDelivery opens a handle on dir's journal through a Manager of its
// own (one process holds a files journal at a time: each handle is closed
// before the next opens).
func filesDelivery(cfg *configs.Config, dir string) func() (sessions.Delivery, func(), error) {
	return func() (sessions.Delivery, func(), error) {
		mgr, err := openFiles(dir, cfg.Session.LockTimeout)
		if err != nil {
			return nil, nil, err
		}
		return mgr.Journal(), func() { _ = mgr.Close() }, nil
	}
}

// postgresDelivery opens a new Delivery handle on db; closing it makes what
// it accepted claimable at once.
func postgresDelivery(db *pgstore.DB) func() (sessions.Delivery, func(), error) {
	return func() (sessions.Delivery, func(), error) {
		d := db.Delivery(pgstore.DeliveryOptions{Logger: zap.NewNop(), SyncMarks: true})
		return d, func() { _ = d.Close() }, nil
	}
}

// postgresStores opens an agent's sessions on db as the postgres backend
// serves them (pgstore.Store: the index and its TranscriptLog).
func postgresStores(db *pgstore.DB) func(agent string) (sessions.AgentStore, error) {
	return func(agent string) (sessions.AgentStore, error) { return db.Store(agent, nil), nil }
}
