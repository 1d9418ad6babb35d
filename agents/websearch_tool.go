package agents

import (
	"context"
	"encoding/json"
	"errors"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/agents/websearch"
)

// webSearchToolName is the web_search tool: opt-in per agent
// (tools.allow), served only when webSearch.provider is configured.
const webSearchToolName = "web_search"

// webSearchResult is what the model reads: numbered results with their
// URLs, and a reminder to cite them.
type webSearchResult struct {
	Query    string         `json:"query"`
	Provider string         `json:"provider"`
	Results  []webSearchHit `json:"results"`
	Note     string         `json:"note"`
}

type webSearchHit struct {
	N int `json:"n"`
	websearch.Result
}

// webSearchTool offers websearch.Searcher.Search to the model. A refused
// query, a spent per-turn or daemon-wide budget and a provider failure
// are tool error results the model reads; none fails the turn.
func (r *Runner) webSearchTool() tool {
	return tool{
		def: llm.Tool{
			Name: webSearchToolName,
			Description: "Search the web. Returns numbered results, each with a title, URL and snippet. " +
				"Cite the URLs of the results you use in your answer; fetch a page with web_fetch (when offered) for more than the snippet.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"what to search for"},` +
				`"count":{"type":"integer","minimum":1,"maximum":20,"description":"results wanted (at most the configured maximum)"}},"required":["query"]}`),
		},
		run: func(ctx context.Context, s *session, raw json.RawMessage) (any, error) {
			if r.search == nil {
				return nil, toolErrorf("web_search is not configured on this gateway")
			}
			var args struct {
				Query string `json:"query"`
				Count int    `json:"count"`
			}
			if err := decodeArgs(raw, &args); err != nil {
				return nil, err
			}
			if s.searches >= r.search.MaxPerTurn() {
				return nil, toolErrorf("web_search: this turn's %d searches are spent; answer with what you found", r.search.MaxPerTurn())
			}
			s.searches++
			res, err := r.search.Search(ctx, websearch.Query{Text: args.Query, Count: args.Count})
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err() // the turn was stopped: not the model's business
				}
				if !errors.Is(err, websearch.ErrRate) {
					s.log.Info("web_search failed", zap.String("provider", r.search.Provider()), zap.Error(err))
				}
				return nil, toolErrorf("%s", err.Error())
			}
			out := webSearchResult{Query: args.Query, Provider: r.search.Provider(), Results: make([]webSearchHit, len(res)),
				Note: "Cite the sources you use by their URL."}
			for i, h := range res {
				out.Results[i] = webSearchHit{N: i + 1, Result: h}
			}
			if len(res) == 0 {
				out.Note = "No results. Try other words."
			}
			return out, nil
		},
	}
}
