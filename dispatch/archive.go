package dispatch

import (
	"context"

	"github.com/gateway/gateway/sessions"
)

// archiveCommand handles /sessions, /switch, /history and /delete.
func (d *Dispatcher) archiveCommand(ctx context.Context, store *sessions.Store, w *work) string {
	return "This command is not available yet."
}
