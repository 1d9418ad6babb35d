package sessions

import (
	"context"
	"errors"

	"go.uber.org/zap"
)

// MaintainAgents runs maintain (one agent's Maintain under the policy in
// force) for every agent listed, in order: a backend's MaintainAll. A
// failure is logged and reported with the others, and the rest still
// run; the end of ctx stops the round and is returned.
func MaintainAgents(ctx context.Context, log *zap.Logger, agents []string,
	maintain func(ctx context.Context, agentID string) (MaintenanceReport, error)) ([]MaintenanceReport, error) {
	var (
		out  []MaintenanceReport
		errs []error
	)
	for _, a := range agents {
		rep, err := maintain(ctx, a)
		if err != nil {
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
			log.Warn("session maintenance failed", zap.String("agent_id", a), zap.Error(err))
			errs = append(errs, err)
		}
		out = append(out, rep)
	}
	return out, errors.Join(errs...)
}
