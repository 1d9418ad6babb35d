package agents

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/gateway/gateway/routing"
)

// Defaults of agents.defaults (SPEC §9).
const (
	DefaultModel             = "local/echo"
	DefaultContextWindow     = 200000
	DefaultMaxConcurrent     = 4
	DefaultTimeoutSeconds    = 600
	DefaultReserveTokens     = 20000
	DefaultKeepRecentTokens  = 20000
	DefaultCompactionTimeout = 120
	DefaultSubagentMax       = 8
	DefaultMaxToolIterations = 8
	DefaultMaxHistoryShare   = 0.5

	// MinContextWindow is the smallest window a turn runs with;
	// WarnContextWindow logs a warning below it.
	MinContextWindow  = 16000
	WarnContextWindow = 32000
)

// Agent is one configured agent.
type Agent struct {
	ID            string `mapstructure:"id"`
	SystemPrompt  string `mapstructure:"systemPrompt"`
	Model         Model  `mapstructure:"model"` // "provider/model" or {primary, fallbacks}; empty = defaults
	ContextWindow int    `mapstructure:"contextWindow"`
	// Tools is the agent's tool policy; web_fetch is off unless allowed.
	Tools Tools `mapstructure:"tools"`
	// Memory is the agent's notes that survive /new (memory.go).
	Memory MemoryConfig `mapstructure:"memory"`
	// Workspace is the directory whose files the message tool's
	// send_media may send (media_out.go); empty: none.
	Workspace string `mapstructure:"workspace"`
	// Compaction is the agent's own keep rule (keep.go); when it sets any
	// key it replaces the defaults' keep rule as a whole.
	Compaction KeepRecent `mapstructure:"compaction"`
}

// Defaults are agents.defaults.
type Defaults struct {
	Model          Model      `mapstructure:"model"` // "provider/model" or {primary, fallbacks}
	ContextWindow  int        `mapstructure:"contextWindow"`
	MaxConcurrent  int        `mapstructure:"maxConcurrent"`
	TimeoutSeconds int        `mapstructure:"timeoutSeconds"`
	Compaction     Compaction `mapstructure:"compaction"`
	Subagents      Subagents  `mapstructure:"subagents"`
	// MaxToolIterations bounds model calls per turn (default 8).
	MaxToolIterations int `mapstructure:"maxToolIterations"`
	// MaxHistoryShare is the largest share of the window the history sent
	// to the model may take (default 0.5); older turns are left out.
	MaxHistoryShare float64 `mapstructure:"maxHistoryShare"`
	// Media caps what the agents send (media_out.go).
	Media MediaOut `mapstructure:"media"`
}

// Compaction configures automatic compaction.
type Compaction struct {
	ReserveTokens int `mapstructure:"reserveTokens"`
	// KeepRecentTokens, KeepRecentTurns and KeepRecentMessages are what a
	// compaction keeps verbatim (keep.go); with none set,
	// keepRecentTokens is DefaultKeepRecentTokens.
	KeepRecentTokens   int `mapstructure:"keepRecentTokens"`
	KeepRecentTurns    int `mapstructure:"keepRecentTurns"`
	KeepRecentMessages int `mapstructure:"keepRecentMessages"`
	TimeoutSeconds     int `mapstructure:"timeoutSeconds"` // default 120
}

// Subagents configures sessions_spawn.
type Subagents struct {
	MaxConcurrent int      `mapstructure:"maxConcurrent"`
	AllowAgents   []string `mapstructure:"allowAgents"` // "*" allows every agent
}

// WithDefaults fills zero fields with the documented defaults.
func (d Defaults) WithDefaults() Defaults {
	if d.Model.Primary == "" {
		d.Model.Primary = DefaultModel
	}
	if d.ContextWindow == 0 {
		d.ContextWindow = DefaultContextWindow
	}
	if d.MaxConcurrent == 0 {
		d.MaxConcurrent = DefaultMaxConcurrent
	}
	if d.TimeoutSeconds == 0 {
		d.TimeoutSeconds = DefaultTimeoutSeconds
	}
	if d.Compaction.ReserveTokens == 0 {
		d.Compaction.ReserveTokens = DefaultReserveTokens
	}
	if d.Compaction.keep().isZero() {
		d.Compaction.KeepRecentTokens = DefaultKeepRecentTokens
	}
	if d.Compaction.TimeoutSeconds == 0 {
		d.Compaction.TimeoutSeconds = DefaultCompactionTimeout
	}
	if d.Subagents.MaxConcurrent == 0 {
		d.Subagents.MaxConcurrent = DefaultSubagentMax
	}
	if d.MaxToolIterations == 0 {
		d.MaxToolIterations = DefaultMaxToolIterations
	}
	if d.MaxHistoryShare == 0 {
		d.MaxHistoryShare = DefaultMaxHistoryShare
	}
	d.Media = d.Media.withDefaults()
	return d
}

// Validate checks d (after WithDefaults).
func (d Defaults) Validate() error {
	var errs []error
	if d.ContextWindow < 1 {
		errs = append(errs, fmt.Errorf("contextWindow %d: must be positive", d.ContextWindow))
	}
	if d.MaxConcurrent < 1 {
		errs = append(errs, fmt.Errorf("maxConcurrent %d: at least 1", d.MaxConcurrent))
	}
	if d.TimeoutSeconds < 1 {
		errs = append(errs, fmt.Errorf("timeoutSeconds %d: at least 1", d.TimeoutSeconds))
	}
	if c := d.Compaction; c.ReserveTokens < 0 || c.TimeoutSeconds < 1 {
		errs = append(errs, fmt.Errorf("compaction: reserveTokens must not be negative, timeoutSeconds at least 1"))
	}
	if err := d.Compaction.keep().Validate(); err != nil {
		errs = append(errs, fmt.Errorf("compaction.%w", err))
	}
	if d.Compaction.ReserveTokens >= d.ContextWindow {
		errs = append(errs, fmt.Errorf("compaction.reserveTokens %d: must be below contextWindow %d", d.Compaction.ReserveTokens, d.ContextWindow))
	}
	if d.Subagents.MaxConcurrent < 1 {
		errs = append(errs, fmt.Errorf("subagents.maxConcurrent %d: at least 1", d.Subagents.MaxConcurrent))
	}
	for _, a := range d.Subagents.AllowAgents {
		if a != "*" && !routing.ValidID(a) {
			errs = append(errs, fmt.Errorf("subagents.allowAgents: %q is not an agent id", a))
		}
	}
	if d.MaxToolIterations < 1 || d.MaxToolIterations > 100 {
		errs = append(errs, fmt.Errorf("maxToolIterations %d: want 1..100", d.MaxToolIterations))
	}
	if d.MaxHistoryShare <= 0 || d.MaxHistoryShare > 1 {
		errs = append(errs, fmt.Errorf("maxHistoryShare %v: want (0, 1]", d.MaxHistoryShare))
	}
	if err := d.Media.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Validate checks one agent entry.
func (a Agent) Validate() error {
	if !routing.ValidID(a.ID) {
		return fmt.Errorf("id %q: want ^[a-z0-9][a-z0-9_-]{0,63}$", a.ID)
	}
	// A window below MinContextWindow is accepted here and refused per
	// turn with a message the chat can show.
	if a.ContextWindow < 0 {
		return fmt.Errorf("agent %s: contextWindow %d: must not be negative", a.ID, a.ContextWindow)
	}
	if err := a.Tools.Validate(); err != nil {
		return fmt.Errorf("agent %s: %w", a.ID, err)
	}
	if err := a.Compaction.Validate(); err != nil {
		return fmt.Errorf("agent %s: compaction.%w", a.ID, err)
	}
	if err := a.Memory.Validate(); err != nil {
		return fmt.Errorf("agent %s: %w", a.ID, err)
	}
	if a.Workspace != "" && !filepath.IsAbs(a.Workspace) {
		return fmt.Errorf("agent %s: workspace %q: want an absolute path", a.ID, a.Workspace)
	}
	return nil
}

func (d Defaults) turnTimeout() time.Duration { return time.Duration(d.TimeoutSeconds) * time.Second }

func (d Defaults) compactionTimeout() time.Duration {
	return time.Duration(d.Compaction.TimeoutSeconds) * time.Second
}

func (d Defaults) allows(target string) bool {
	for _, a := range d.Subagents.AllowAgents {
		if a == "*" || a == target {
			return true
		}
	}
	return false
}
