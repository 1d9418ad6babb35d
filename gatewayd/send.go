package gatewayd

import (
	"context"
	"errors"
	"fmt"

	"github.com/gateway/gateway/api"
	"github.com/gateway/gateway/dispatch"
	"github.com/gateway/gateway/routing"
)

// operatorSend adapts the dispatcher's SendToSession to the API's
// SendFunc: a bad text is the request's fault (400), a session with no chat
// a conflict (409).
func operatorSend(disp *dispatch.Dispatcher) api.SendFunc {
	return func(ctx context.Context, agentID string, key routing.Key, text string) (any, error) {
		sent, err := disp.SendToSession(ctx, agentID, key, text)
		switch {
		case errors.Is(err, dispatch.ErrBadText):
			return nil, fmt.Errorf("%w: %w", api.ErrBadRequest, err)
		case errors.Is(err, dispatch.ErrNoChat):
			return nil, fmt.Errorf("%w: %w", api.ErrConflict, err)
		case err != nil:
			return nil, err
		}
		return sent, nil
	}
}
