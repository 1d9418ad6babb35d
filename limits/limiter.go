package limits

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/gateway/gateway/sessions"
)

// Scopes and kinds of a rejection (the labels of
// gateway_limit_rejections_total).
const (
	ScopeSender = "sender"
	ScopeRoom   = "room"
	ScopeAgent  = "agent"

	KindRate    = "rate"
	KindDaily   = "daily"
	KindMonthly = "monthly"
)

// Options wires a Limiter.
type Options struct {
	// Counters is where budget counters are kept (Backend.Limits()).
	Counters sessions.LimitCounters
	Logger   *zap.Logger
	// Registerer takes the metrics (nil: not registered).
	Registerer prometheus.Registerer
	Now        func() time.Time
	// FlushEvery is how often Run writes pending charges (default 1 s).
	FlushEvery time.Duration
}

// Subject is who and where a message is: the agent it goes to, the
// channel, the sender and the room (chat) ids.
type Subject struct {
	AgentID  string
	Channel  string
	SenderID string
	ChatID   string
}

// Usage is one turn's charge: its tokens and cost, the agent, the room and
// the senders whose messages it answered (split evenly between them).
type Usage struct {
	AgentID string
	Channel string
	ChatID  string
	Senders []string
	Tokens  int64
	CostUSD float64
	// Holds are the Decision.Hold of the messages the turn answered:
	// Charge drops them as it adds the real cost.
	Holds []string
}

// Decision is Check's answer.
type Decision struct {
	Allow  bool
	Exempt bool
	// Scope and Kind say which limit refused the message.
	Scope, Kind string
	// RetryAfter is when the rate allows the next message; ResetAt when
	// the budget's window ends.
	RetryAfter time.Duration
	ResetAt    time.Time
	// Notice is the text to send to the chat; empty when allowed or when
	// this sender was told this reason (Scope and Kind) in this room
	// within noticeEvery.
	Notice string
	// Hold is the budget hold an allowed message took (hold.go), "" when
	// no budget applies: pass it to Charge with the turn's cost
	// (Usage.Holds), or to Release when the message gets no turn.
	Hold string
	// taken are the rate buckets an allowed message took one from (Refund).
	taken []bucketKey
}

// Limiter applies the limits of the config in force.
type Limiter struct {
	pol     atomic.Pointer[policy]
	store   sessions.LimitCounters
	reserve sessions.LimitReserver // the store's, nil: holds in memory
	now     func() time.Time
	log     *zap.Logger
	every   time.Duration
	rejects *prometheus.CounterVec
	fails   prometheus.Counter

	mu        sync.Mutex // guards the maps and lastPrune
	buckets   map[bucketKey]*bucket
	counters  map[sessions.LimitKey]*counter
	notices   map[noticeKey]time.Time
	lastPrune time.Time
	fresh     map[sessions.LimitKey]struct{} // written by the flush in progress
	holds     map[string]*hold               // live holds by id
	release   []string                       // store holds to drop at the next flush
	largest   map[string]sessions.LimitTotal // largest turn charged per agent
}

type bucketKey struct{ scope, subject string }

// bucket is a token bucket: tokens at last.
type bucket struct {
	tokens float64
	last   time.Time
	burst  float64
	perSec float64
}

// noticeKey is whom a notice told, and why: a sender told one reason
// (say, the rate) still hears another (its budget) when it comes.
type noticeKey struct{ channel, chat, sender, scope, kind string }

// counter is a budget counter: stored is the store's total as last known
// (what this process flushed included), pending what was charged since,
// flushing what a flush is writing, held this process's live holds.
type counter struct {
	end      int64
	stored   sessions.LimitTotal
	pending  sessions.LimitTotal
	flushing sessions.LimitTotal
	held     sessions.LimitTotal
	loaded   bool
	budget   bool      // a check reads it: refreshed at each flush
	retryAt  time.Time // after a failed read
}

func (c *counter) total() sessions.LimitTotal {
	return sessions.LimitTotal{Tokens: c.stored.Tokens + c.pending.Tokens + c.flushing.Tokens,
		CostUSD: c.stored.CostUSD + c.pending.CostUSD + c.flushing.CostUSD}
}

// used is what a check compares with the budget: the charges and the holds.
func (c *counter) used() sessions.LimitTotal {
	t := c.total()
	return sessions.LimitTotal{Tokens: t.Tokens + c.held.Tokens, CostUSD: t.CostUSD + c.held.CostUSD}
}

// New returns a Limiter applying cfg (owners are commands.owners, exempt
// when cfg.ExemptOwners). Call Run to write charges.
func New(cfg Config, owners []string, o Options) (*Limiter, error) {
	if o.Counters == nil {
		return nil, fmt.Errorf("limits: new: Counters is required")
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.FlushEvery <= 0 {
		o.FlushEvery = time.Second
	}
	l := &Limiter{
		store: o.Counters, now: o.Now, log: o.Logger, every: o.FlushEvery,
		rejects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_limit_rejections_total",
			Help: "Messages refused by limits, by scope (sender, room, agent) and kind (rate, daily, monthly).",
		}, []string{"scope", "kind"}),
		fails: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_limit_store_errors_total",
			Help: "Failed reads and writes of budget counters (charges are kept and retried).",
		}),
		buckets: map[bucketKey]*bucket{}, counters: map[sessions.LimitKey]*counter{}, notices: map[noticeKey]time.Time{},
		fresh: map[sessions.LimitKey]struct{}{}, holds: map[string]*hold{}, largest: map[string]sessions.LimitTotal{},
	}
	l.reserve, _ = o.Counters.(sessions.LimitReserver)
	if o.Registerer != nil {
		for _, c := range []prometheus.Collector{l.rejects, l.fails} {
			if err := o.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("limits: register metrics: %w", err)
			}
		}
	}
	if err := l.SetConfig(cfg, owners); err != nil {
		return nil, err
	}
	return l, nil
}

// SetConfig applies a reloaded config to the next message; an invalid one
// is an error naming the key, and the running one stays.
func (l *Limiter) SetConfig(cfg Config, owners []string) error {
	p, err := compile(cfg, owners)
	if err != nil {
		return err
	}
	l.pol.Store(p)
	return nil
}

// scoped is one scope of a subject under the policy.
type scoped struct {
	scope, subject string
	lim            compiledScope
}

// scopes lists s's scopes that have an id.
func scopes(set compiledSet, s Subject) []scoped {
	out := make([]scoped, 0, 3)
	if s.SenderID != "" {
		out = append(out, scoped{ScopeSender, s.AgentID + "/" + s.Channel + ":" + s.SenderID, set.sender})
	}
	if s.ChatID != "" {
		out = append(out, scoped{ScopeRoom, s.AgentID + "/" + s.Channel + ":" + s.ChatID, set.room})
	}
	if s.AgentID != "" {
		out = append(out, scoped{ScopeAgent, s.AgentID, set.agent})
	}
	return out
}

// Check decides whether s's message may reach its agent, taking one
// message from each rate bucket when it may. It reads a budget counter
// from the store the first time it needs it; a store that fails is logged
// and the message allowed on what is in memory.
func (l *Limiter) Check(ctx context.Context, s Subject) Decision {
	p := l.pol.Load()
	if p.exempt.has(s.Channel, s.SenderID) {
		return Decision{Allow: true, Exempt: true}
	}
	now := l.now()
	sc := scopes(p.set(s.AgentID), s)
	var keys []windowKey
	for _, x := range sc {
		if x.lim.budgets() {
			keys = p.windowKeys(keys, x.scope, x.subject, x.lim, now)
		}
	}
	if len(keys) > 0 {
		l.load(ctx, keys, now)
	}
	l.mu.Lock()
	d, take := l.decideLocked(sc, keys, now)
	est := l.estimateLocked(p, s.AgentID)
	remote := d.Allow && len(keys) > 0 && l.reserve != nil
	if d.Allow && len(keys) > 0 && !remote {
		d.Hold, _ = l.holdLocked(keys, est, now, false)
	}
	if d.Allow {
		// Taken before the mutex is let go for the store's hold, so a
		// message checked meanwhile sees the bucket without this token.
		for i, b := range take {
			if b != nil {
				b.tokens--
				d.taken = append(d.taken, bucketKey{sc[i].scope, sc[i].subject})
			}
		}
	}
	if remote {
		l.mu.Unlock()
		id, ok, over := l.reserveRemote(ctx, l.reserve, keys, est, now)
		l.mu.Lock()
		if ok {
			d.Hold = id
		} else {
			d = budgetRefusal(over)
			for _, b := range take { // a refused message used no rate
				if b != nil {
					b.tokens = min(b.burst, b.tokens+1)
				}
			}
		}
	}
	if !d.Allow {
		nk := noticeKey{s.Channel, s.ChatID, s.SenderID, d.Scope, d.Kind}
		if last, ok := l.notices[nk]; !ok || now.Sub(last) >= p.noticeEvery {
			l.notices[nk] = now
			d.Notice = notice(p, d, now)
		}
	}
	l.mu.Unlock()
	if !d.Allow {
		l.rejects.WithLabelValues(d.Scope, d.Kind).Inc()
	}
	return d
}

// Refund gives back the rate tokens d's Check took, for an allowed
// message that was then not accepted (a platform's redelivery dropped as
// a duplicate, a journal that refused it): it must not count against the
// rates. Its budget hold is Release's.
func (l *Limiter) Refund(d Decision) {
	if len(d.taken) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range d.taken {
		if b := l.buckets[k]; b != nil { // a forgotten bucket is full
			b.tokens = min(b.burst, b.tokens+1)
		}
	}
}

// budgetRefusal is the decision of a budget k reached.
func budgetRefusal(k windowKey) Decision {
	kind := KindDaily
	if k.key.Period == "month" {
		kind = KindMonthly
	}
	return Decision{Scope: k.key.Scope, Kind: kind, ResetAt: time.Unix(k.end, 0)}
}

// decideLocked checks the budgets (charges and holds), then the rates; it
// returns the buckets to take a message from when all allow it.
func (l *Limiter) decideLocked(sc []scoped, keys []windowKey, now time.Time) (Decision, [3]*bucket) {
	var take [3]*bucket
	for _, k := range keys {
		c := l.counters[k.key]
		if c == nil {
			continue
		}
		if u, b := c.used(), k.budget; b.Tokens > 0 && u.Tokens >= b.Tokens || b.CostUSD > 0 && u.CostUSD >= b.CostUSD {
			return budgetRefusal(k), take
		}
	}
	for i, x := range sc {
		if x.lim.rate.perSec <= 0 {
			continue
		}
		bk := bucketKey{x.scope, x.subject}
		b := l.buckets[bk]
		if b == nil {
			b = &bucket{tokens: x.lim.rate.burst, last: now}
			l.buckets[bk] = b
		}
		b.burst, b.perSec = x.lim.rate.burst, x.lim.rate.perSec
		b.refill(now)
		if b.tokens < 1 {
			wait := time.Duration((1 - b.tokens) / b.perSec * float64(time.Second))
			return Decision{Scope: x.scope, Kind: KindRate, RetryAfter: wait}, take
		}
		take[i] = b
	}
	return Decision{Allow: true}, take
}

// refill adds what the rate gave since last, up to the burst.
func (b *bucket) refill(now time.Time) {
	if dt := now.Sub(b.last).Seconds(); dt > 0 {
		b.tokens = min(b.burst, b.tokens+dt*b.perSec)
	}
	if now.After(b.last) {
		b.last = now
	}
	b.tokens = min(b.tokens, b.burst)
}

// full reports a bucket that has refilled: forgetting it changes nothing.
func (b *bucket) full(now time.Time) bool {
	return b.tokens+now.Sub(b.last).Seconds()*b.perSec >= b.burst
}

// windowKey is one budget counter of a scope in the window holding now.
type windowKey struct {
	key    sessions.LimitKey
	end    int64
	budget Budget
}

// windowKeys appends the day and month counters of scope/subject that
// have a budget under p.
func (p *policy) windowKeys(out []windowKey, scope, subject string, lim compiledScope, now time.Time) []windowKey {
	if lim.daily.on() {
		s, e := p.dayWindow(now)
		out = append(out, windowKey{sessions.LimitKey{Scope: scope, Subject: subject, Period: "day", Start: s.Unix()}, e.Unix(), lim.daily})
	}
	if lim.monthly.on() {
		s, e := p.monthWindow(now)
		out = append(out, windowKey{sessions.LimitKey{Scope: scope, Subject: subject, Period: "month", Start: s.Unix()}, e.Unix(), lim.monthly})
	}
	return out
}
