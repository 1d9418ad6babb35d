package agents

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// candidate is one model a turn may call: the primary or a fallback.
type candidate struct {
	name     string // "provider/model"
	provider llm.Provider
	model    string // without the provider prefix
}

// errAllOpen is returned (wrapped) when no model of the chain may be called.
var errAllOpen = errors.New("every model's circuit breaker is open")

// modelChain is the models a session of a may call, in order: the
// session's override or the agent's primary or the defaults', then the
// agent's fallbacks (the defaults' when the agent lists none), without
// repeats.
func (r *Runner) modelChain(a Agent, e sessions.Entry) []string {
	fallbacks := a.Model.Fallbacks
	if fallbacks == nil {
		fallbacks = r.defaults.Model.Fallbacks
	}
	out := []string{r.modelName(a, e)}
	for _, f := range fallbacks {
		dup := false
		for _, o := range out {
			dup = dup || o == f
		}
		if !dup {
			out = append(out, f)
		}
	}
	return out
}

// candidates resolves chain; fallbacks whose provider is missing (the
// runner's own check refuses them, so only a hand-built Entry can) are
// left out with a warning, a missing primary is an error.
func (r *Runner) candidates(chain []string, log *zap.Logger) ([]candidate, error) {
	out := make([]candidate, 0, len(chain))
	for i, name := range chain {
		p, model, err := r.provider(name)
		if err != nil {
			if i == 0 {
				return nil, err
			}
			log.Warn("fallback model not configured; skipped", zap.String("model", name), zap.Error(err))
			continue
		}
		out = append(out, candidate{name: name, provider: p, model: model})
	}
	return out, nil
}

// newFallbackCounter creates gateway_model_fallbacks_total and registers it
// with reg (nil: not registered).
func newFallbackCounter(reg prometheus.Registerer) (*prometheus.CounterVec, error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_model_fallbacks_total",
		Help: "Model calls answered by a fallback model, by the model first in line (from) and the one that answered (to).",
	}, []string{"from", "to"})
	if reg != nil {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("agents: register fallback counter: %w", err)
		}
	}
	return c, nil
}

// stream makes one model call of a turn, moving down the session's chain
// when a provider fails through its own fault (llm.ProviderFault) and
// skipping providers whose breaker is open. The turn stays on the model
// that answered. When every breaker is open, the current model is called
// anyway: a breaker only saves time, it never leaves a turn with no model
// to try. A call that already streamed text is not retried elsewhere (the
// chat has seen part of an answer).
func (r *Runner) stream(ctx context.Context, s *session, req llm.Request, images bool, onDelta func(string)) (sessions.Message, error) {
	var lastErr error
	tried := false
	for i := s.cur; i < len(s.cands); i++ {
		c := s.cands[i]
		if !r.breaker.Allow(c.provider.Name()) {
			s.log.Info("model skipped: circuit breaker open", zap.String("model", c.name))
			continue
		}
		tried = true
		msg, next, err := r.attempt(ctx, s, i, req, images, onDelta)
		if !next {
			return msg, err
		}
		lastErr = err
		if i+1 < len(s.cands) {
			s.log.Warn("model failed; trying the next one", zap.String("model", c.name),
				zap.String("next_model", s.cands[i+1].name), zap.Error(err))
		}
	}
	if !tried {
		s.log.Warn("every model's circuit breaker is open; calling the current one anyway", zap.String("model", s.cands[s.cur].name))
		msg, _, err := r.attempt(ctx, s, s.cur, req, images, onDelta)
		return msg, err
	}
	if lastErr == nil {
		lastErr = errAllOpen
	}
	return sessions.Message{}, lastErr
}

// attempt calls candidate i; next says the failure may move on to the next
// model. images says req's messages may hold images (false: they hold
// none, and a model that takes none needs them replaced in no message).
func (r *Runner) attempt(ctx context.Context, s *session, i int, req llm.Request, images bool, onDelta func(string)) (sessions.Message, bool, error) {
	c := s.cands[i]
	pname := c.provider.Name()
	req.Model = c.model
	if images && !llm.Images(c.provider, c.model) {
		req.Messages = llm.WithoutImages(req.Messages)
	}
	streamed := false
	msg, err := c.provider.Stream(ctx, req, func(e llm.Event) {
		if e.TextDelta != "" {
			streamed = true
			if onDelta != nil {
				onDelta(e.TextDelta)
			}
		}
	})
	switch {
	case err == nil:
		r.breaker.Success(pname)
		if i != s.cur {
			r.noteFallback(s, i)
		}
		s.cur, s.provider, s.model = i, c.provider, c.model
		return msg, false, nil
	case ctx.Err() != nil:
		r.breaker.Abandon(pname)
		return msg, false, err
	case !llm.ProviderFault(err):
		// The provider answered; the request was at fault.
		r.breaker.Success(pname)
		return msg, false, err
	}
	if r.breaker.FailureErr(pname, err) {
		s.log.Warn("circuit breaker opened", zap.String("provider", pname), zap.Duration("cooldown", r.breaker.cooldown))
	}
	return msg, !streamed, err
}

// noteFallback logs and counts a call answered by s.cands[i] instead of
// s.cands[s.cur], the model the call started from.
func (r *Runner) noteFallback(s *session, i int) {
	from, to := s.cands[s.cur].name, s.cands[i].name
	s.log.Warn("model fallback", zap.String("from_model", from), zap.String("to_model", to))
	r.fallbacks.WithLabelValues(from, to).Inc()
	r.fallbackUse.note(from, to)
}
