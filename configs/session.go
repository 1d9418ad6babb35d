package configs

import (
	"fmt"
	"time"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// Session is the session configuration (SPEC §2, §3).
type Session struct {
	DMScope        routing.DMScope                 `mapstructure:"dmScope"`
	MainKey        string                          `mapstructure:"mainKey"`
	IdentityLinks  map[string][]string             `mapstructure:"identityLinks"`
	Reset          sessions.ResetPolicy            `mapstructure:"reset"`
	ResetByType    map[string]sessions.ResetPolicy `mapstructure:"resetByType"`
	ResetByChannel map[string]sessions.ResetPolicy `mapstructure:"resetByChannel"`
	ResetTriggers  []string                        `mapstructure:"resetTriggers"`
	Maintenance    sessions.Maintenance            `mapstructure:"maintenance"`
	LockTimeout    time.Duration                   `mapstructure:"lockTimeout"`
}

// ResetConfig returns the sessions package's view of the reset settings.
func (s Session) ResetConfig() sessions.ResetConfig {
	return sessions.ResetConfig{Reset: s.Reset, ResetByType: s.ResetByType,
		ResetByChannel: s.ResetByChannel, ResetTriggers: s.ResetTriggers}
}

// Validate checks the reset policies, maintenance and lock timeout of the
// session section (its routing keys are checked with the bindings,
// Config.RoutingConfig).
func (s Session) Validate() error {
	if err := s.ResetConfig().Validate(); err != nil {
		return err
	}
	switch s.Maintenance.Mode {
	case "enforce", "warn":
	default:
		return fmt.Errorf("session.maintenance.mode: %q is not enforce or warn", s.Maintenance.Mode)
	}
	if s.Maintenance.PruneAfter < 0 {
		return fmt.Errorf("session.maintenance.pruneAfter: %s must not be negative", s.Maintenance.PruneAfter)
	}
	if s.Maintenance.MaxEntries < 1 {
		return fmt.Errorf("session.maintenance.maxEntries: must be at least 1")
	}
	if s.LockTimeout <= 0 {
		return fmt.Errorf("session.lockTimeout: must be positive")
	}
	return nil
}
