package transfer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gateway/gateway/sessions"
)

// DefaultWorkers is how many keys Copy moves at once.
const DefaultWorkers = 4

// Options tune Copy.
type Options struct {
	// Overwrite replaces a key the target holds with other content;
	// without it such a key is a conflict and nothing is written.
	Overwrite bool
	// Workers is how many keys are read and written at once
	// (DefaultWorkers when 0).
	Workers int
}

// Counts sizes a state (or the part of it a migration moved).
type Counts struct {
	Agents int `json:"agents"`
	// Keys are session keys; Sessions are current sessions (index
	// entries); Archived are archived sessions.
	Keys     int `json:"keys"`
	Sessions int `json:"sessions"`
	Archived int `json:"archived"`
	// Lines are transcript lines (the session header and every entry).
	Lines int `json:"transcriptEntries"`
}

func (c *Counts) addKey(k sessions.KeyState) {
	c.Keys++
	if k.Entry != nil {
		c.Sessions++
	}
	c.Archived += len(k.Archived)
}

// Stats reports what Copy did.
type Stats struct {
	Counts
	// Copied keys were written; Skipped ones were in the target already
	// with the same content.
	Copied, Skipped int
	Elapsed         time.Duration
}

// ConflictError is Copy's refusal: the target holds these keys (agent/key)
// with other content. Nothing was written.
type ConflictError struct {
	Keys []string
	// Shared says some of them use a session id another key of the target
	// has: --overwrite cannot resolve that.
	Shared bool
}

func (e *ConflictError) Error() string {
	const show = 10
	list := e.Keys[:min(len(e.Keys), show)]
	more := ""
	if len(e.Keys) > show {
		more = fmt.Sprintf(" (and %d more)", len(e.Keys)-show)
	}
	hint := "use --overwrite to replace them"
	if e.Shared {
		hint = "a session id of one key belongs to another key in the target, which --overwrite does not resolve"
	}
	return fmt.Sprintf("sessions: copy: the target holds %d key(s) with other content: %s%s; %s",
		len(e.Keys), strings.Join(list, "; "), more, hint)
}

// plan is what Copy decided for one key.
type plan struct {
	agent string
	src   sessions.KeyState
	write bool
}

// Copy moves every session key of from into to: a key the target holds
// with the same content (sameState, identical transcripts) is skipped, one
// it holds with other content is a *ConflictError unless o.Overwrite, and
// the others are written (clocks at microseconds, see transfer.go). All
// conflicts are found before anything is written. Running Copy twice
// gives the same target.
func Copy(ctx context.Context, from sessions.Exporter, to sessions.Importer, o Options) (Stats, error) {
	start := time.Now()
	workers := o.Workers
	if workers <= 0 {
		workers = DefaultWorkers
	}
	agents, err := from.ExportAgents(ctx)
	if err != nil {
		return Stats{}, err
	}
	var (
		plans     []*plan
		conflicts []string
		shared    bool
		st        Stats
		mu        sync.Mutex // guards conflicts, st
	)
	for _, agent := range agents {
		ps, err := planAgent(ctx, from, to, agent, workers, func(what string, hard bool) {
			mu.Lock()
			conflicts = append(conflicts, agent+"/"+what)
			shared = shared || hard
			mu.Unlock()
		})
		if err != nil {
			return Stats{}, err
		}
		if len(ps) > 0 {
			st.Agents++ // an agent whose index is empty has nothing to copy
		}
		plans = append(plans, ps...)
	}
	if len(conflicts) > 0 && (!o.Overwrite || shared) {
		slices.Sort(conflicts)
		return Stats{}, &ConflictError{Keys: conflicts, Shared: shared}
	}
	err = parallel(ctx, workers, len(plans), func(i int) error {
		p := plans[i]
		mu.Lock()
		st.addKey(p.src)
		mu.Unlock()
		if !p.write {
			n, err := countLines(ctx, from, p.agent, p.src)
			mu.Lock()
			st.Skipped++
			st.Lines += n
			mu.Unlock()
			return err
		}
		kc, n, err := readKey(ctx, from, p.agent, p.src)
		if err != nil {
			return err
		}
		if err := to.ImportKey(ctx, p.agent, kc); err != nil {
			return fmt.Errorf("sessions: copy %s/%s: %w", p.agent, p.src.Key, err)
		}
		mu.Lock()
		st.Copied++
		st.Lines += n
		mu.Unlock()
		return nil
	})
	if s, ok := to.(sessions.Syncer); ok && err == nil {
		err = s.Sync(ctx)
	}
	st.Elapsed = time.Since(start)
	return st, err
}

// planAgent decides for each key of agent whether it is written; conflict
// is called for each key the target holds with other content (hard when
// its session id is another key's there).
func planAgent(ctx context.Context, from sessions.Exporter, to sessions.Importer, agent string, workers int, conflict func(what string, hard bool)) ([]*plan, error) {
	src, err := from.ExportKeys(ctx, agent)
	if err != nil {
		return nil, err
	}
	dst, err := to.ExportKeys(ctx, agent)
	if err != nil {
		return nil, err
	}
	have := make(map[string]sessions.KeyState, len(dst))
	owner := map[string]string{} // session id → key in the target
	for _, k := range dst {
		have[k.Key] = k
		for _, r := range k.Refs() {
			owner[r.SessionID] = k.Key
		}
	}
	plans := make([]*plan, len(src))
	err = parallel(ctx, workers, len(src), func(i int) error {
		k := src[i].AtMicros()
		plans[i] = &plan{agent: agent, src: k, write: true}
		for _, r := range k.Refs() {
			if o, ok := owner[r.SessionID]; ok && o != k.Key {
				conflict(fmt.Sprintf("%s: its session %s is %s's in the target", k.Key, r.SessionID, o), true)
				return nil
			}
		}
		cur, ok := have[k.Key]
		if !ok {
			return nil
		}
		same, why, _, _, err := sameKey(ctx, from, to, agent, k, cur)
		if err != nil {
			return err
		}
		if same {
			plans[i].write = false
		} else {
			conflict(k.Key+": "+why, false)
		}
		return nil
	})
	return plans, err
}

// sameKey compares key a of one state with b of another, transcripts
// included; why says what differs; na and nb count the transcript lines
// of each.
func sameKey(ctx context.Context, ea, eb sessions.Exporter, agent string, a, b sessions.KeyState) (same bool, why string, na, nb int, err error) {
	refsB := map[string]sessions.TranscriptRef{}
	for _, r := range b.Refs() {
		refsB[r.SessionID] = r
	}
	for _, r := range a.Refs() {
		la, err := ea.ExportTranscript(ctx, agent, r)
		if err != nil {
			return false, "", 0, 0, err
		}
		na += len(la)
		rb, ok := refsB[r.SessionID]
		if !ok {
			if why == "" {
				why = fmt.Sprintf("session %s missing", r.SessionID)
			}
			continue
		}
		lb, err := eb.ExportTranscript(ctx, agent, rb)
		if err != nil {
			return false, "", 0, 0, err
		}
		nb += len(lb)
		if n := firstDiff(la, lb); n >= 0 && why == "" {
			why = fmt.Sprintf("transcript %s differs at line %d (%d lines vs %d)", r.SessionID, n+1, len(la), len(lb))
		}
	}
	if !sameState(a, b) {
		why = "index entry or archived sessions differ"
	}
	return why == "", why, na, nb, nil
}

// firstDiff is the index of the first line that differs, -1 if none.
func firstDiff(a, b [][]byte) int {
	for i := range min(len(a), len(b)) {
		if !bytes.Equal(a[i], b[i]) {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// readKey reads k's transcripts from e.
func readKey(ctx context.Context, e sessions.Exporter, agent string, k sessions.KeyState) (sessions.KeyCopy, int, error) {
	kc := sessions.KeyCopy{KeyState: k, Transcripts: map[string][][]byte{}}
	n := 0
	for _, r := range k.Refs() {
		lines, err := e.ExportTranscript(ctx, agent, r)
		if err != nil {
			return sessions.KeyCopy{}, 0, fmt.Errorf("sessions: copy %s/%s: %w", agent, k.Key, err)
		}
		kc.Transcripts[r.SessionID] = lines
		n += len(lines)
	}
	return kc, n, nil
}

func countLines(ctx context.Context, e sessions.Exporter, agent string, k sessions.KeyState) (int, error) {
	_, n, err := readKey(ctx, e, agent, k)
	return n, err
}

// parallel runs fn(0..n-1) on up to workers goroutines and returns the
// first error (the rest of the work is then abandoned).
func parallel(ctx context.Context, workers, n int, fn func(i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					cancel(err)
				}
			}
		}()
	}
	func() {
		defer close(next)
		for i := range n {
			select {
			case next <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

// sameState reports whether a and b hold the same key at microsecond
// resolution. Archived file names are not compared: PostgreSQL has none.
func sameState(a, b sessions.KeyState) bool {
	a, b = a.AtMicros(), b.AtMicros()
	if a.Key != b.Key || (a.Entry == nil) != (b.Entry == nil) || len(a.Archived) != len(b.Archived) {
		return false
	}
	if a.Entry != nil && *a.Entry != *b.Entry {
		return false
	}
	for i := range a.Archived {
		x, y := a.Archived[i], b.Archived[i]
		x.File, y.File = "", ""
		if x != y {
			return false
		}
	}
	return true
}

// micros cuts t to UTC microseconds, the resolution PostgreSQL keeps
// (sessions.Entry.AtMicros does the same for an entry's clocks).
func micros(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }
