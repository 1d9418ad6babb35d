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
	// MaxPerRoom bounds the active jobs of one room (default 50).
	MaxPerRoom int `mapstructure:"maxPerRoom"`
}

// Default is the configuration of a config file that says nothing.
func Default() Config {
	return Config{Enabled: true, TimeZone: "UTC", TimeZoneByAgent: map[string]string{}, Grace: DefaultGrace,
		Poll: DefaultPoll, MaxPerRoom: DefaultMaxPerRoom}
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
