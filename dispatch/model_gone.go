package dispatch

import (
	"context"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// modelGone handles a session whose /model choice the config no longer
// offers (a hot reload took it out, or the agent may not use it): the
// runner answers on the agent's model, and here the chat is told so,
// once, and the choice cleared, so that the person knows which model
// answers and is not told again at every turn. Internal and ambient turns
// say nothing (the runner's fallback covers them).
func (t *turn) modelGone(ctx context.Context) {
	gone := t.entry.ModelFor()
	if gone == "" || t.ambient || t.last.Agent != nil {
		return
	}
	r := t.d.opts.Runner
	cur := r.Model(t.first.AgentID, t.entry)
	if strings.EqualFold(cur, gone) {
		return
	}
	_, err := t.store.Patch(ctx, t.first.Key, func(e *sessions.Entry) error {
		if strings.EqualFold(e.ModelFor(), gone) { // not chosen again meanwhile
			e.ModelOverride, e.ProviderOverride = "", ""
		}
		return nil
	})
	if err != nil {
		t.log.Warn("withdrawn model choice not cleared", zap.String("model_override", gone), zap.Error(err))
		return
	}
	t.entry.ModelOverride, t.entry.ProviderOverride = "", ""
	t.log.Info("session's model choice withdrawn; the agent's model runs", zap.String("model_override", gone), zap.String("model", cur))
	t.d.notify(ctx, t.last.In, fmt.Sprintf("The model %s chosen for this session is no longer available, so this session now uses the agent's model, %s. /model lists the choices.", gone, orDash(cur)))
}
