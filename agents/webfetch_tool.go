package agents

import (
	"context"
	"encoding/json"
	"strings"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents/llm"
)

// webFetchTool offers webfetch.Fetcher.Fetch to the model. Every fetch
// failure (refused address, timeout, bad URL, HTTP transport error) is a
// tool error result the model reads; none fails the turn.
func (r *Runner) webFetchTool() tool {
	return tool{
		def: llm.Tool{
			Name: webFetchToolName,
			Description: "Fetch a public http(s) web page and return its readable text (HTML reduced to the main article; " +
				"plain text and JSON as is; other content described by type and size). Private and local addresses are refused.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string","description":"an absolute http or https URL"},` +
				`"maxChars":{"type":"integer","minimum":1,"maximum":100000,"description":"cut the text to this many characters (default 20000)"}},"required":["url"]}`),
		},
		run: func(ctx context.Context, s *session, raw json.RawMessage) (any, error) {
			var args struct {
				URL      string `json:"url"`
				MaxChars int    `json:"maxChars"`
			}
			if err := decodeArgs(raw, &args); err != nil {
				return nil, err
			}
			if strings.TrimSpace(args.URL) == "" {
				return nil, toolErrorf("url: required")
			}
			res, err := r.fetch.Fetch(ctx, strings.TrimSpace(args.URL), args.MaxChars)
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err() // the turn was stopped: not the model's business
				}
				s.log.Info("web_fetch refused or failed", zap.Error(err))
				return nil, toolErrorf("%s", err.Error())
			}
			return res, nil
		},
	}
}
