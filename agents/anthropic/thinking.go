package anthropic

import (
	"errors"
	"net/http"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"go.uber.org/zap"
)

// A thinking budget on a model that refuses it. /think is a session
// setting and /model switches models under it: the Messages API answers
// 400 to a thinking budget on a model without extended thinking. Rather
// than fail every turn of the session until a member finds /think off, the
// provider sends that request again without the budget and remembers the
// model, so later requests to it leave the budget out from the start. The
// session's level stays; another model that takes it still gets it.

func (p *Provider) refusedThinking(model string) bool {
	_, ok := p.noThinking.Load(model)
	return ok
}

func (p *Provider) noteNoThinking(model, level string) {
	if _, known := p.noThinking.LoadOrStore(model, struct{}{}); !known {
		p.log.Info("model does not take a thinking budget: sent without it from now on",
			zap.String("model", model), zap.String("thinking", level))
	}
}

// refusesThinking reports a 400 that names the thinking parameter (before
// any of the answer was streamed: a 400 is the response's status).
func refusesThinking(err error) bool {
	var apiErr *sdk.Error
	return errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusBadRequest &&
		strings.Contains(strings.ToLower(apiErr.RawJSON()+" "+apiErr.Error()), "thinking")
}
