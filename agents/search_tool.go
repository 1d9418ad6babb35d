package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// Scopes of sessions_search (agents.list[].tools.sessionsSearch.scope).
const (
	// SearchScopeSession: the calling chat's session and its threads or
	// topics only.
	SearchScopeSession = "session"
	// SearchScopeAgent (the default): every current session of the calling
	// agent, whichever chat it belongs to.
	SearchScopeAgent = "agent"
	// SearchScopeAll: every agent's sessions.
	SearchScopeAll = "all"
)

// maxToolSearchHits bounds one sessions_search call.
const maxToolSearchHits = 50

// SearchToolConfig is tools.sessionsSearch.
type SearchToolConfig struct {
	// Scope is what the tool may search: session, agent (default) or all.
	Scope string `mapstructure:"scope"`
}

// Validate checks the scope.
func (c SearchToolConfig) Validate() error {
	switch c.Scope {
	case "", SearchScopeSession, SearchScopeAgent, SearchScopeAll:
		return nil
	}
	return fmt.Errorf("tools.sessionsSearch.scope: %q is not one of %s, %s, %s",
		c.Scope, SearchScopeSession, SearchScopeAgent, SearchScopeAll)
}

func (c SearchToolConfig) scope() string {
	if c.Scope == "" {
		return SearchScopeAgent
	}
	return c.Scope
}

// searchHit is one sessions_search result as the model reads it.
type searchHit struct {
	Agent       string    `json:"agent,omitempty"` // scope all only
	SessionKey  string    `json:"sessionKey"`
	ThisSession bool      `json:"thisSession,omitempty"`
	EntryID     string    `json:"entryId"`
	Role        string    `json:"role"`
	At          time.Time `json:"at"`
	Snippet     string    `json:"snippet"`
}

// searchTool offers the storage seam's transcript search to the model,
// limited by the agent's tools.sessionsSearch.scope: never another agent's
// sessions unless the scope is all. Off unless tools.allow names it.
func (r *Runner) searchTool() tool {
	return tool{
		def: llm.Tool{
			Name: searchToolName,
			Description: "Search earlier conversations for messages containing all the given words (case-insensitive, whole words), " +
				"newest first. Returns the session key, role, time and a snippet of each matching message.",
			Parameters: json.RawMessage(`{"type":"object","properties":{` +
				`"query":{"type":"string","description":"the words to find"},` +
				`"limit":{"type":"integer","minimum":1,"maximum":50,"description":"at most this many hits (default 10)"},` +
				`"since":{"type":"string","description":"only messages since: a duration such as 24h or 7d, or a date such as 2026-11-01"},` +
				`"agent":{"type":"string","description":"only this agent's sessions (when searching every agent is allowed)"}},` +
				`"required":["query"]}`),
		},
		run: func(ctx context.Context, s *session, raw json.RawMessage) (any, error) {
			var args struct {
				Query string `json:"query"`
				Limit int    `json:"limit"`
				Since string `json:"since"`
				Agent string `json:"agent"`
			}
			if err := decodeArgs(raw, &args); err != nil {
				return nil, err
			}
			q, err := r.searchQuery(s, args.Query, args.Limit, args.Since, args.Agent)
			if err != nil {
				return nil, err
			}
			hits, err := r.opts.Sessions.Search().Search(ctx, q)
			if errors.Is(err, sessions.ErrBadQuery) {
				return nil, toolErrorf("%s", strings.TrimPrefix(err.Error(), sessions.ErrBadQuery.Error()+": "))
			}
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				s.log.Error("sessions_search failed", zap.Error(err))
				return nil, toolErrorf("search is unavailable right now")
			}
			all := s.agent.Tools.SessionsSearch.scope() == SearchScopeAll
			out := make([]searchHit, 0, len(hits))
			for _, h := range hits {
				if !all && h.Agent != strings.ToLower(s.agent.ID) { // the backends filter; this is the guarantee
					continue
				}
				sh := searchHit{SessionKey: h.SessionKey, ThisSession: h.SessionKey == s.key.String(),
					EntryID: h.EntryID, Role: h.Role, At: h.At, Snippet: h.Snippet}
				if all {
					sh.Agent = h.Agent
				}
				out = append(out, sh)
			}
			return map[string]any{"hits": out}, nil
		},
	}
}

// searchQuery builds the query a call may run in s under the agent's scope.
func (r *Runner) searchQuery(s *session, text string, limit int, since, agent string) (sessions.SearchQuery, error) {
	if strings.TrimSpace(text) == "" {
		return sessions.SearchQuery{}, toolErrorf("query: required")
	}
	if limit <= 0 || limit > maxToolSearchHits {
		limit = 10
	}
	self := strings.ToLower(s.agent.ID)
	q := sessions.SearchQuery{Text: text, Limit: limit, Agents: []string{self}}
	var err error
	if q.Since, err = sessions.ParseSince(since, r.now()); err != nil {
		return q, toolErrorf("since: %q: want a duration such as 24h or 7d, or a date such as 2026-11-01", since)
	}
	scope := s.agent.Tools.SessionsSearch.scope()
	if a := strings.TrimSpace(agent); a != "" {
		id, err := routing.NormalizeID(a)
		if err != nil {
			return q, toolErrorf("agent: %q is not an agent id", a)
		}
		if scope != SearchScopeAll && id != self {
			return q, toolErrorf("agent: this agent may search only its own sessions")
		}
		q.Agents = []string{id}
	} else if scope == SearchScopeAll {
		q.Agents = nil
	}
	if scope == SearchScopeSession {
		q.Room = s.key.String()
	}
	return q, nil
}
