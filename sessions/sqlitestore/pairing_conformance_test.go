package sqlitestore_test

import (
	"testing"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/sessionstest"
)

func TestPairingConformance(t *testing.T) {
	var f files[sessions.PairingState]
	sessionstest.TestPairing(t, func(t *testing.T, share sessions.PairingState) sessions.PairingState {
		db, path := f.open(t, share, nil)
		return f.keep(db.Pairing(), path)
	})
}
