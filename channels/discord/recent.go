package discord

// After a resumed reconnect the messages of the gap reach the adapter
// twice: replayed by the resume and read from the history by the catch-up
// (which runs first); a message posted while the catch-up reads comes
// live and from the history too. The journal drops a second copy of a
// journaled message, but not everything is journaled (a refused command
// answered with a notice, a pairing code): the adapter itself hands each
// message to the handler once, remembering the ids of the last
// recentCap messages it handled or ignored.

// recentCap bounds the message ids remembered.
const recentCap = 8192

// recentIDs is a bounded set of message ids, the oldest forgotten first.
// Used on Run's goroutine only.
type recentIDs struct {
	ids  map[string]struct{}
	ring []string
	next int
}

func (r *recentIDs) has(id string) bool {
	_, ok := r.ids[id]
	return ok
}

func (r *recentIDs) add(id string) {
	if id == "" || r.has(id) {
		return
	}
	if r.ids == nil {
		r.ids, r.ring = map[string]struct{}{}, make([]string, recentCap)
	}
	if old := r.ring[r.next]; old != "" {
		delete(r.ids, old)
	}
	r.ring[r.next] = id
	r.ids[id] = struct{}{}
	r.next = (r.next + 1) % len(r.ring)
}
