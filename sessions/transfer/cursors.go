package transfer

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/gateway/gateway/sessions"
)

// CopyCursors copies every cursor of from (which must implement
// CursorScopes) into to. A name to holds with the same value is skipped;
// one it holds with another value is an error naming it unless overwrite.
// It returns the cursors written.
func CopyCursors(ctx context.Context, from, to sessions.Cursors, overwrite bool) (int, error) {
	all, err := allCursors(ctx, from)
	if err != nil {
		return 0, fmt.Errorf("sessions: copy cursors: %w", err)
	}
	n := 0
	for _, scope := range keysOf(all) {
		have, err := to.CursorsOf(ctx, scope)
		if err != nil {
			return n, fmt.Errorf("sessions: copy cursors %q: %w", sessions.Clip(scope), err)
		}
		for _, name := range keysOf(all[scope]) {
			v := all[scope][name]
			if cur, ok := have[name]; ok && (cur == v || !overwrite) {
				if cur != v {
					return n, fmt.Errorf("sessions: copy cursors: the target's cursor %q of %q is %q, not %q; use --overwrite to replace it",
						sessions.Clip(name), sessions.Clip(scope), sessions.Clip(cur), sessions.Clip(v))
				}
				continue
			}
			if err := to.SetCursor(ctx, scope, name, v); err != nil {
				return n, fmt.Errorf("sessions: copy cursors %q %q: %w", sessions.Clip(scope), sessions.Clip(name), err)
			}
			n++
		}
	}
	return n, nil
}

// CompareCursors returns how many cursors a holds and the ones b lacks or
// holds with another value.
func CompareCursors(ctx context.Context, a, b sessions.Cursors) (int, []string, error) {
	all, err := allCursors(ctx, a)
	if err != nil {
		return 0, nil, fmt.Errorf("sessions: compare cursors: %w", err)
	}
	n := 0
	var diffs []string
	for _, scope := range keysOf(all) {
		have, err := b.CursorsOf(ctx, scope)
		if err != nil {
			return 0, nil, fmt.Errorf("sessions: compare cursors %q: %w", sessions.Clip(scope), err)
		}
		for _, name := range keysOf(all[scope]) {
			n++
			if v, ok := have[name]; !ok || v != all[scope][name] {
				diffs = append(diffs, fmt.Sprintf("cursor %q of %q differs in the target", sessions.Clip(name), sessions.Clip(scope)))
			}
		}
	}
	return n, diffs, nil
}

func allCursors(ctx context.Context, c sessions.Cursors) (map[string]map[string]string, error) {
	ls, ok := c.(sessions.CursorScopes)
	if !ok {
		return nil, fmt.Errorf("%T cannot list its scopes", c)
	}
	scopes, err := ls.CursorScopes(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]map[string]string, len(scopes))
	for _, s := range scopes {
		if out[s], err = c.CursorsOf(ctx, s); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func keysOf[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
