package channels

import (
	"fmt"
	"strings"
	"time"
)

// Ambient rooms (issue 24): in a room with ambient on, the messages that
// do not address the bot are kept as room history as usual and, in
// debounced batches, reach the agent as room events; it answers only when
// it decides to, through the message tool, and otherwise stays silent.
// The dispatcher runs the batches (dispatch/ambient.go); this is their
// configuration.

// Defaults and bounds of a room's ambient settings.
const (
	// DefaultAmbientDebounce is how long a room must be quiet before its
	// batch goes to the agent; each new message restarts it.
	DefaultAmbientDebounce = 30 * time.Second
	// DefaultAmbientMaxBatch sends a batch at once when it holds this many
	// messages, however busy the room is.
	DefaultAmbientMaxBatch = 20
	// DefaultAmbientPerHour caps the batches a room sends its agent in any
	// hour; what is not sent stays in the room history for later.
	DefaultAmbientPerHour = 12
	MaxAmbientDebounce    = 10 * time.Minute
	MaxAmbientMaxBatch    = MaxHistoryLimit
	MaxAmbientPerHour     = 3600
)

// AmbientConfig is what a room's ambient settings resolve to.
type AmbientConfig struct {
	// On says the room's unaddressed messages reach the agent in batches.
	On bool
	// Model is the "provider/model" of the batches' turns ("" the
	// session's own): a cheaper model for listening.
	Model    string
	Debounce time.Duration
	MaxBatch int
	PerHour  int
}

// DefaultAmbient is a room's ambient settings with nothing configured
// (off).
func DefaultAmbient() AmbientConfig {
	return AmbientConfig{Debounce: DefaultAmbientDebounce, MaxBatch: DefaultAmbientMaxBatch, PerHour: DefaultAmbientPerHour}
}

// AmbientDefaults are the ambient keys of RoomDefaults: ambient,
// ambientModel, ambientDebounce, ambientMaxBatch, ambientPerHour.
type AmbientDefaults struct {
	Ambient         *bool          `mapstructure:"ambient" json:"ambient,omitempty"`
	AmbientModel    string         `mapstructure:"ambientModel" json:"ambientModel,omitempty"`
	AmbientDebounce *time.Duration `mapstructure:"ambientDebounce" json:"ambientDebounce,omitempty"`
	AmbientMaxBatch *int           `mapstructure:"ambientMaxBatch" json:"ambientMaxBatch,omitempty"`
	AmbientPerHour  *int           `mapstructure:"ambientPerHour" json:"ambientPerHour,omitempty"`
}

// validate names the first bad key, prefixed with path. That ambientModel
// names a configured provider is checked where the providers are known
// (configs).
func (c AmbientDefaults) validate(path string) error {
	if m := c.AmbientModel; m != "" {
		p, model, ok := strings.Cut(m, "/")
		if !ok || strings.TrimSpace(p) == "" || strings.TrimSpace(model) == "" || strings.TrimSpace(m) != m {
			return fmt.Errorf("%sambientModel: %q is not provider/model", path, m)
		}
	}
	if d := c.AmbientDebounce; d != nil && (*d < time.Second || *d > MaxAmbientDebounce) {
		return fmt.Errorf("%sambientDebounce: %s is not between 1s and %s", path, *d, MaxAmbientDebounce)
	}
	if n := c.AmbientMaxBatch; n != nil && (*n < 1 || *n > MaxAmbientMaxBatch) {
		return fmt.Errorf("%sambientMaxBatch: %d is outside 1..%d", path, *n, MaxAmbientMaxBatch)
	}
	if n := c.AmbientPerHour; n != nil && (*n < 1 || *n > MaxAmbientPerHour) {
		return fmt.Errorf("%sambientPerHour: %d is outside 1..%d", path, *n, MaxAmbientPerHour)
	}
	return nil
}

// apply returns a with the fields c sets.
func (c AmbientDefaults) apply(a AmbientConfig) AmbientConfig {
	if c.Ambient != nil {
		a.On = *c.Ambient
	}
	if c.AmbientModel != "" {
		a.Model = c.AmbientModel
	}
	if c.AmbientDebounce != nil {
		a.Debounce = *c.AmbientDebounce
	}
	if c.AmbientMaxBatch != nil {
		a.MaxBatch = *c.AmbientMaxBatch
	}
	if c.AmbientPerHour != nil {
		a.PerHour = *c.AmbientPerHour
	}
	return a
}
