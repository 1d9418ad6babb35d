package openai

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// Reasoning effort on models that refuse it. /think is a session setting
// and /model switches models under it: an OpenAI-compatible endpoint
// answers 400 to reasoning_effort on a model that does not reason (gpt-4o:
// "Unsupported parameter: 'reasoning_effort' is not supported with this
// model."). Rather than fail every turn of the session until a member
// finds /think off, the provider sends that request again without the
// field and remembers the model, so later requests to it leave the field
// out from the start. The session's level stays; another model of the
// session that takes it still gets it.

// noEffort holds the models of a provider that refused reasoning_effort.
type noEffort struct{ models sync.Map } // model name -> struct{}

func (n *noEffort) has(model string) bool {
	_, ok := n.models.Load(model)
	return ok
}

// sendWithEffort is send, asked once more without reasoning_effort when
// the endpoint refused that field for this model.
func (p *Provider) sendWithEffort(ctx context.Context, req llm.Request) (*http.Response, error) {
	if llm.ReasoningEffort(req.Thinking) != "" && p.noEffort.has(req.Model) {
		req.Thinking = sessions.ThinkingOff
	}
	resp, err := p.send(ctx, req)
	if err == nil || llm.ReasoningEffort(req.Thinking) == "" || !refusesEffort(err) {
		return resp, err
	}
	level := req.Thinking
	req.Thinking = sessions.ThinkingOff
	if resp, err = p.send(ctx, req); err == nil { // only a model that answered without it is remembered
		if _, known := p.noEffort.models.LoadOrStore(req.Model, struct{}{}); !known {
			p.log.Info("model does not take reasoning_effort: sent without it from now on",
				zap.String("provider", p.name), zap.String("model", req.Model), zap.String("thinking", level))
		}
	}
	return resp, err
}

// refusesEffort reports a 400, or the 422 of an endpoint that validates
// its body strictly (Mistral: extra_forbidden), that names the
// reasoning_effort parameter.
func refusesEffort(err error) bool {
	refused := func(status int) bool {
		return status == http.StatusBadRequest || status == http.StatusUnprocessableEntity
	}
	var apiErr *APIError
	if errors.As(err, &apiErr) && refused(apiErr.Status) {
		return apiErr.Param == "reasoning_effort" || strings.Contains(apiErr.Message, "reasoning_effort")
	}
	var reqErr *RequestError
	return errors.As(err, &reqErr) && refused(reqErr.Status) && strings.Contains(string(reqErr.Body), "reasoning_effort")
}
