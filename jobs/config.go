package jobs

import (
	"fmt"
	"time"
)

// Config is the jobs section of the configuration.
type Config struct {
	// Enabled runs the scheduler and lets /remind, the schedule tool, the
	// CLI and the API add jobs (default true); off, jobs can still be
	// listed and removed.
	Enabled bool `mapstructure:"enabled"`
	// TimeZone is the zone times of day are read in ("tomorrow 09:00")
	// and recurring jobs keep (an IANA name; default UTC);
	// TimeZoneByAgent overrides it per agent id.
	TimeZone        string            `mapstructure:"timezone"`
	TimeZoneByAgent map[string]string `mapstructure:"timezoneByAgent"`
	// Grace is how late a job due while the gateway was down may still
	// fire at start (default 10m); later it is reported missed.
	Grace time.Duration `mapstructure:"grace"`
	// Poll is the longest the scheduler sleeps (default 1s): how soon a
	// job another process added is seen.
	Poll time.Duration `mapstructure:"poll"`
	// Lease is how long a scheduler's claim holds a due job (default 1m):
	// a replica that dies holding claims leaves their jobs for that long
	// before another fires them. Read at start.
	Lease time.Duration `mapstructure:"lease"`
	// MaxPerRoom bounds the active jobs of one room (default 50).
	MaxPerRoom int `mapstructure:"maxPerRoom"`
}

// Bounds of Config.Lease: a claim must outlast the handling of a batch
// of due jobs (each a journal append), and a dead replica's jobs should
// not wait for hours.
const (
	MinLease = 5 * time.Second
	MaxLease = time.Hour
)

// Default is the configuration of a config file that says nothing.
func Default() Config {
	return Config{Enabled: true, TimeZone: "UTC", TimeZoneByAgent: map[string]string{}, Grace: DefaultGrace,
		Poll: DefaultPoll, Lease: DefaultLease, MaxPerRoom: DefaultMaxPerRoom}
}

// Validate checks the section; errors name the key.
func (c Config) Validate() error {
	if _, err := Location(c.TimeZone); err != nil {
		return fmt.Errorf("jobs.timezone: %w", err)
	}
	for a, z := range c.TimeZoneByAgent {
		if _, err := Location(z); err != nil {
			return fmt.Errorf("jobs.timezoneByAgent.%s: %w", a, err)
		}
	}
	switch {
	case c.Grace < 0:
		return fmt.Errorf("jobs.grace: %s is negative", c.Grace)
	case c.Poll < 0 || c.Poll > time.Minute:
		return fmt.Errorf("jobs.poll: %s is not between 0 and 1m", c.Poll)
	case c.Lease != 0 && (c.Lease < MinLease || c.Lease > MaxLease):
		return fmt.Errorf("jobs.lease: %s is not between %s and %s (0: the default %s)", c.Lease, MinLease, MaxLease, DefaultLease)
	case c.MaxPerRoom < 0:
		return fmt.Errorf("jobs.maxPerRoom: %d is negative", c.MaxPerRoom)
	}
	return nil
}

// Zone is the time zone of agentID's jobs (UTC when the configured name
// does not load, which Validate refuses).
func (c Config) Zone(agentID string) *time.Location {
	name := c.TimeZone
	if z, ok := c.TimeZoneByAgent[agentID]; ok {
		name = z
	}
	loc, err := Location(name)
	if err != nil {
		return time.UTC
	}
	return loc
}
