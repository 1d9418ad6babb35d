package agents

// This file fixes the exported API the rest of the daemon codes against.
// The implementation replaces the bodies and may split this file.

import (
	"context"
	"encoding/json"
	"errors"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

var errTODO = errors.New("agents: not implemented yet")

// Agent is one configured agent.
type Agent struct {
	ID            string `mapstructure:"id"`
	SystemPrompt  string `mapstructure:"systemPrompt"`
	Model         string `mapstructure:"model"` // "provider/model"; empty = defaults
	ContextWindow int    `mapstructure:"contextWindow"`
}

// Defaults are agents.defaults.
type Defaults struct {
	Model          string     `mapstructure:"model"`
	ContextWindow  int        `mapstructure:"contextWindow"`
	MaxConcurrent  int        `mapstructure:"maxConcurrent"`
	TimeoutSeconds int        `mapstructure:"timeoutSeconds"`
	Compaction     Compaction `mapstructure:"compaction"`
	Subagents      Subagents  `mapstructure:"subagents"`
}

// Compaction configures automatic compaction.
type Compaction struct {
	ReserveTokens    int `mapstructure:"reserveTokens"`
	KeepRecentTokens int `mapstructure:"keepRecentTokens"`
}

// Subagents configures sessions_spawn.
type Subagents struct {
	MaxConcurrent int      `mapstructure:"maxConcurrent"`
	AllowAgents   []string `mapstructure:"allowAgents"`
}

// Options configures a Runner.
type Options struct {
	Sessions  *sessions.Manager
	Providers map[string]llm.Provider // by provider name
	Defaults  Defaults
	Agents    []Agent
	Logger    *zap.Logger
	// Dispatch queues work on a lane (see Dispatch); nil disables subagents.
	Dispatch func(ctx context.Context, d Dispatch) error
}

// Runner runs turns.
type Runner struct{}

// NewRunner validates opts and returns a Runner.
func NewRunner(opts Options) (*Runner, error) { return nil, errTODO }

// Turn is one agent turn for a session whose entry exists (sessions.Store.Begin).
type Turn struct {
	AgentID string
	Key     routing.Key
	// Inputs are new user messages; the runner appends them to the
	// transcript first (then calls OnInputsAppended).
	Inputs           []sessions.Message
	OnInputsAppended func()
	// Steer returns messages that arrived during the run (steer mode).
	Steer   func() []sessions.Message
	OnDelta func(text string)
	OnTool  func(name string, args json.RawMessage)
}

// Result is the outcome of a turn.
type Result struct {
	SessionID     string
	Text          string // final assistant text
	TokenEstimate int64  // context tokens after the turn
}

// Run runs one turn to completion (tool loop included).
func (r *Runner) Run(ctx context.Context, t Turn) (Result, error) { return Result{}, errTODO }

// Compact compacts key's session now (/compact [instructions]).
func (r *Runner) Compact(ctx context.Context, agentID string, key routing.Key, instructions string) error {
	return errTODO
}

// Dispatch asks the daemon to queue a message for a session's lane; the
// dispatcher provides it (agents cannot import lanes). Subagent runs use it
// with Subagent=true; announcements of a finished child into its parent use
// it with Subagent=false. Deliver says whether the resulting reply goes to
// the session's chat.
type Dispatch struct {
	AgentID  string
	Key      routing.Key
	Subagent bool
	Message  sessions.Message
	Deliver  bool
}
