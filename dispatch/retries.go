package dispatch

import (
	"sync"

	"github.com/gateway/gateway/routing"
)

// retries holds, by session, the work of failed turns waiting to run
// again (a failure's backoff, a storage outage), outside any lane: /stop
// takes a session's (commands.stop), so a message stopped there is not
// answered afterwards by its retry.
type retries struct {
	mu sync.Mutex
	by map[routing.Key]map[*retry]struct{}
}

// retry is one waiting batch of work.
type retry struct {
	key routing.Key
	ws  []*work
}

// add registers ws (all of one session) as waiting to run again.
func (r *retries) add(ws []*work) *retry {
	x := &retry{key: ws[0].Key.Canonical(), ws: ws}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.by == nil {
		r.by = map[routing.Key]map[*retry]struct{}{}
	}
	if r.by[x.key] == nil {
		r.by[x.key] = map[*retry]struct{}{}
	}
	r.by[x.key][x] = struct{}{}
	return x
}

// waiting reports whether x still waits (no /stop took it).
func (r *retries) waiting(x *retry) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.by[x.key][x]
	return ok
}

// take ends x's wait; false when /stop took it first (its work is then
// settled there, not run).
func (r *retries) take(x *retry) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.by[x.key][x]; !ok {
		return false
	}
	r.forgetLocked(x)
	return true
}

// drop takes the work waiting for key's session.
func (r *retries) drop(key routing.Key) [][]*work {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out [][]*work
	for x := range r.by[key.Canonical()] {
		out = append(out, x.ws)
		r.forgetLocked(x)
	}
	return out
}

func (r *retries) forgetLocked(x *retry) {
	delete(r.by[x.key], x)
	if len(r.by[x.key]) == 0 {
		delete(r.by, x.key)
	}
}
