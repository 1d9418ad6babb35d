package sessions

import (
	"fmt"
	"time"
)

// ResetMode is off, daily or idle.
type ResetMode string

// Reset modes.
const (
	ResetOff   ResetMode = "off"
	ResetDaily ResetMode = "daily"
	ResetIdle  ResetMode = "idle"
)

// ResetPolicy is one reset rule (SPEC §3.6). Zero fields inherit.
type ResetPolicy struct {
	Mode        ResetMode `mapstructure:"mode" json:"mode,omitempty"`
	AtHour      *int      `mapstructure:"atHour" json:"atHour,omitempty"`
	IdleMinutes *int      `mapstructure:"idleMinutes" json:"idleMinutes,omitempty"`
	Timezone    string    `mapstructure:"timezone" json:"timezone,omitempty"`
}

// ResetConfig is the whole reset configuration.
type ResetConfig struct {
	Reset          ResetPolicy            `mapstructure:"reset"`
	ResetByType    map[string]ResetPolicy `mapstructure:"resetByType"`
	ResetByChannel map[string]ResetPolicy `mapstructure:"resetByChannel"`
	ResetTriggers  []string               `mapstructure:"resetTriggers"`
}

// Maintenance is the pruning configuration (SPEC §3.3).
type Maintenance struct {
	Mode             string        `mapstructure:"mode"` // enforce | warn
	PruneAfter       time.Duration `mapstructure:"pruneAfter"`
	MaxEntries       int           `mapstructure:"maxEntries"`
	ArchiveRetention time.Duration `mapstructure:"archiveRetention"`
}

// WithDefaults is c with its unset fields filled (every backend applies
// the same defaults).
func (c Maintenance) WithDefaults() Maintenance { return c.withDefaults() }

// ActiveWindow protects sessions touched this recently from pruning and
// maxEntries, in every backend.
const ActiveWindow = activeWindow

// withDefaults fills unset fields: mode enforce, pruneAfter 720h,
// maxEntries 5000, archiveRetention = pruneAfter.
func (c Maintenance) withDefaults() Maintenance {
	if c.Mode == "" {
		c.Mode = MaintenanceEnforce
	}
	if c.PruneAfter == 0 {
		c.PruneAfter = defaultPruneAfter
	}
	if c.MaxEntries == 0 {
		c.MaxEntries = defaultMaxEntries
	}
	if c.ArchiveRetention == 0 {
		c.ArchiveRetention = c.PruneAfter
	}
	return c
}

// Validate names the first bad field.
func (c Maintenance) Validate() error {
	switch c.Mode {
	case "", MaintenanceEnforce, MaintenanceWarn:
	default:
		return fmt.Errorf("session.maintenance.mode: %q is not enforce or warn", c.Mode)
	}
	if c.PruneAfter < 0 {
		return fmt.Errorf("session.maintenance.pruneAfter: %s is negative", c.PruneAfter)
	}
	if c.MaxEntries < 0 {
		return fmt.Errorf("session.maintenance.maxEntries: %d is negative", c.MaxEntries)
	}
	if c.ArchiveRetention < 0 {
		return fmt.Errorf("session.maintenance.archiveRetention: %s is negative", c.ArchiveRetention)
	}
	return nil
}

// MaintenanceReport says what one maintenance pass did (or, in warn mode,
// would have done).
type MaintenanceReport struct {
	AgentID         string
	Enforced        bool     // false in warn mode: nothing was changed
	Pruned          []string // keys archived because not updated within pruneAfter
	Capped          []string // keys archived to respect maxEntries
	ArchivesRemoved []string // archived transcripts past archiveRetention
	LocksRemoved    int      // lock files of sessions no longer current
	TempsRemoved    int      // leftovers of crashed atomic writes
}

// Maintenance defaults (SPEC §3.3, §9).
const (
	MaintenanceEnforce = "enforce"
	MaintenanceWarn    = "warn"

	defaultPruneAfter = 720 * time.Hour
	defaultMaxEntries = 5000
	// activeWindow protects sessions touched this recently from maxEntries.
	activeWindow = time.Minute
)
