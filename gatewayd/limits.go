package gatewayd

import (
	"context"
	"fmt"

	"github.com/gateway/gateway/configs"
	"github.com/gateway/gateway/limits"
)

// buildLimits makes the daemon's Limiter over the backend's budget
// counters (issue 14); hot reload swaps its config (reload.go).
func (d *Daemon) buildLimits(cfg *configs.Config) error {
	l, err := limits.New(cfg.Limits, cfg.Commands.Owners, limits.Options{
		Counters: d.backend.Limits(), Logger: d.log.Named("limits"), Registerer: d.reg, Now: d.opts.Now,
	})
	if err != nil {
		return fmt.Errorf("gateway: limits: %w", err)
	}
	d.limits = l
	return nil
}

// runLimits writes budget charges in the background; stop flushes the
// last ones and waits. It outlives ctx until stop, which serve calls once
// in-flight turns have finished, so their charges are written.
func (d *Daemon) runLimits(ctx context.Context) (stop func()) {
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = d.limits.Run(lctx)
	}()
	return func() {
		cancel()
		<-done
	}
}
