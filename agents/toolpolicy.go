package agents

import (
	"errors"
	"fmt"
	"slices"
)

// Built-in tool names.
const (
	webFetchToolName = "web_fetch"
	listToolName     = "sessions_list"
	historyToolName  = "sessions_history"
	searchToolName   = "sessions_search"
)

// optInTools are built-in tools an agent is offered only when its
// tools.allow names them; the sessions tools are on unless denied.
var optInTools = []string{webFetchToolName, searchToolName}

var builtinTools = []string{spawnToolName, listToolName, historyToolName, webFetchToolName, searchToolName}

// Tools is an agent's tool policy (agents.list[].tools). Allow turns on
// opt-in built-in tools (web_fetch); Deny takes any built-in tool away and
// wins over Allow. Names are checked against the built-in tools.
type Tools struct {
	Allow []string `mapstructure:"allow"`
	Deny  []string `mapstructure:"deny"`
	// SessionsSearch configures sessions_search (search_tool.go).
	SessionsSearch SearchToolConfig `mapstructure:"sessionsSearch"`
}

// Validate checks that every name is a built-in tool.
func (t Tools) Validate() error {
	var errs []error
	for _, f := range []struct {
		field string
		names []string
	}{{"allow", t.Allow}, {"deny", t.Deny}} {
		field := f.field
		for _, n := range f.names {
			if !slices.Contains(builtinTools, n) {
				errs = append(errs, fmt.Errorf("tools.%s: unknown tool %q (built-in: %v)", field, n, builtinTools))
			}
		}
	}
	errs = append(errs, t.SessionsSearch.Validate())
	return errors.Join(errs...)
}

// offers reports whether the policy lets the agent use the named tool.
func (t Tools) offers(name string) bool {
	if slices.Contains(t.Deny, name) {
		return false
	}
	if slices.Contains(optInTools, name) {
		return slices.Contains(t.Allow, name)
	}
	return true
}
