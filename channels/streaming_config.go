package channels

import "fmt"

// This file is the account-level streaming key of this branch. The
// per-room configuration (channels.RoomDefaults with the same YAML key,
// streaming: {mode: ...}) supersedes it: on merging, keep that one and
// delete this file and cmd/gateway/rooms.go.

// StreamingConfig is an account's streaming key: how replies show
// progress in its rooms (Room.Streaming).
type StreamingConfig struct {
	// Mode is off (default), progress or partial.
	Mode string `mapstructure:"mode"`
}

// ModeOrDefault is Mode, or StreamOff when unset.
func (c StreamingConfig) ModeOrDefault() string {
	if c.Mode == "" {
		return StreamOff
	}
	return c.Mode
}

// Validate names a bad mode.
func (c StreamingConfig) Validate() error {
	switch c.Mode {
	case "", StreamOff, StreamProgress, StreamPartial:
		return nil
	}
	return fmt.Errorf("streaming.mode: %q is not off, progress or partial", c.Mode)
}
