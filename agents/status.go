package agents

import (
	"cmp"
	"maps"
	"slices"
	"sync"
)

// ProviderStatus is one configured provider as `gateway status` shows it.
type ProviderStatus struct {
	Name    string        `json:"name"`
	Breaker BreakerStatus `json:"breaker"`
}

// Fallback counts model calls answered by model To although the turn's
// chain started them at From, since the runner was built.
type Fallback struct {
	From  string `json:"from"`
	To    string `json:"to"`
	Count int64  `json:"count"`
}

// ProviderStatus returns every configured provider's breaker, by name.
func (r *Runner) ProviderStatus() []ProviderStatus {
	names := slices.Sorted(maps.Keys(r.opts.Providers))
	out := make([]ProviderStatus, 0, len(names))
	for _, n := range names {
		out = append(out, ProviderStatus{Name: n, Breaker: r.breaker.Status(n)})
	}
	return out
}

// Fallbacks returns the fallbacks used since the runner was built, most
// used first.
func (r *Runner) Fallbacks() []Fallback { return r.fallbackUse.list() }

// fallbackUse counts fallbacks by (from, to) model; safe for concurrent use.
type fallbackUse struct {
	mu sync.Mutex // guards n
	n  map[[2]string]int64
}

func (f *fallbackUse) note(from, to string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil {
		f.n = map[[2]string]int64{}
	}
	f.n[[2]string{from, to}]++
}

func (f *fallbackUse) list() []Fallback {
	f.mu.Lock()
	out := make([]Fallback, 0, len(f.n))
	for k, v := range f.n {
		out = append(out, Fallback{From: k[0], To: k[1], Count: v})
	}
	f.mu.Unlock()
	slices.SortFunc(out, func(a, b Fallback) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To))
	})
	return out
}
