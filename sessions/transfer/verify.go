package transfer

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/gateway/gateway/sessions"
)

// Comparison is what Compare found.
type Comparison struct {
	// Source counts the source state; Target counts the same keys in the
	// target (equal when nothing differs).
	Source, Target Counts
	// Differences name each key that is missing or differs, with what
	// differs.
	Differences []string
	// Extra counts the target's keys the source does not have (a target
	// that held sessions before the copy keeps them).
	Extra int
}

// Compare checks that every key of from is in to with the same state
// (clocks at microseconds) and byte-identical transcripts.
func Compare(ctx context.Context, from, to sessions.Exporter, workers int) (Comparison, error) {
	if workers <= 0 {
		workers = DefaultWorkers
	}
	var c Comparison
	agents, err := from.ExportAgents(ctx)
	if err != nil {
		return c, err
	}
	var mu sync.Mutex // guards c
	for _, agent := range agents {
		src, err := from.ExportKeys(ctx, agent)
		if err != nil {
			return c, err
		}
		dst, err := to.ExportKeys(ctx, agent)
		if err != nil {
			return c, err
		}
		if len(src) > 0 {
			c.Source.Agents++
		}
		if len(dst) > 0 {
			c.Target.Agents++
		}
		have := make(map[string]sessions.KeyState, len(dst))
		for _, k := range dst {
			have[k.Key] = k
		}
		seen := 0
		err = parallel(ctx, workers, len(src), func(i int) error {
			k := src[i]
			t, ok := have[k.Key]
			same, why, na, nb, err := sameKey(ctx, from, to, agent, k, t)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			c.Source.addKey(k)
			c.Source.Lines += na
			if !ok {
				c.Differences = append(c.Differences, fmt.Sprintf("%s/%s: missing in the %s target", agent, k.Key, to.Kind()))
				return nil
			}
			seen++
			c.Target.addKey(t)
			c.Target.Lines += nb
			if !same {
				c.Differences = append(c.Differences, fmt.Sprintf("%s/%s: %s", agent, k.Key, why))
			}
			return nil
		})
		if err != nil {
			return c, err
		}
		c.Extra += len(dst) - seen
	}
	slices.Sort(c.Differences)
	return c, nil
}
