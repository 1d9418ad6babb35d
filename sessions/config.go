package sessions

import "time"

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
