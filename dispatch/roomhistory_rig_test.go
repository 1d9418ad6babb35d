package dispatch

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/gateway/gateway/access"
	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/agents/openai"
	"github.com/gateway/gateway/agents/openai/openaitest"
	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/channels/discord"
	"github.com/gateway/gateway/channels/discord/discordtest"
	"github.com/gateway/gateway/channels/telegram"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
	"github.com/gateway/gateway/limits"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
)

// roomRig is a dispatcher with real channel adapters polling fake platforms
// (telegramtest, discordtest), the real access policy and a real OpenAI
// provider against openaitest: what a group member does and what the model
// is sent, end to end below the daemon's wiring.
type roomRig struct {
	t      *testing.T
	dir    string
	model  *openaitest.Server
	tg     *telegramtest.Server
	dc     *discordtest.Server
	access map[access.Account]access.Config
	room   channels.Room
	queue  QueueConfig
	reset  sessions.ResetConfig
	now    func() time.Time // nil: time.Now
	agents []agents.Agent   // nil: main with no tool policy
	// windows are the models' own context windows (agents.Options.ContextWindows).
	windows agents.ContextWindows
	// platformAdmins is the policy's commands.platformAdmins, owners its
	// commands.owners.
	platformAdmins bool
	owners         []string
	// choices signs and verifies choice buttons (nil: none).
	choices *channels.ChoiceKeys
	// limits, when set, gives the dispatcher a Limiter on the backend's
	// counters (lim, rebuilt by each start).
	limits *limits.Config
	lim    *limits.Limiter

	mgr    *filestore.Manager
	d      *Dispatcher
	cancel context.CancelFunc
	done   []chan error
}

// start opens the state dir, builds the dispatcher and runs the adapters.
func (r *roomRig) start() {
	t := r.t
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	mgr, err := filestore.Open(filestore.Options{StateDir: r.dir, CacheTTL: -1, Logger: log, Now: r.now, Reset: r.reset})
	if err != nil {
		t.Fatal(err)
	}
	prov, err := openai.New(openai.Config{Name: "fake", Provider: r.model.ProviderConfig(), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	agentList := r.agents
	if agentList == nil {
		agentList = []agents.Agent{{ID: "main"}}
	}
	runner, err := agents.NewRunner(agents.Options{Sessions: mgr.Backend(), Providers: map[string]llm.Provider{"fake": prov},
		Defaults: agents.Defaults{Model: agents.Model{Primary: "fake/m"}}, Agents: agentList, Logger: log, ContextWindows: r.windows})
	if err != nil {
		t.Fatal(err)
	}
	resolver, err := routing.NewResolver(routing.Config{})
	if err != nil {
		t.Fatal(err)
	}
	policy, err := access.New(r.access, access.Options{Logger: log, PlatformAdmins: r.platformAdmins, Owners: r.owners})
	if err != nil {
		t.Fatal(err)
	}
	room := r.room
	q := r.queue
	if q.Mode == "" {
		q = QueueConfig{Mode: "followup", Cap: 20, Drop: "summarize"}
	}
	dopts := Options{Sessions: mgr.Backend(), StateDir: mgr.StateDir(), Runner: runner, Logger: log, Now: r.now, Choices: r.choices,
		Providers: []string{"fake"}}
	if r.limits != nil {
		if r.lim, err = limits.New(*r.limits, nil, limits.Options{Counters: mgr.Backend().Limits(), Logger: log}); err != nil {
			t.Fatal(err)
		}
		dopts.Limits = r.lim
	}
	d, err := New(dopts, &Runtime{Resolver: resolver, Queue: q, Reset: r.reset,
		Access: policyVerdict(policy), Room: func(channels.Inbound) channels.Room { return room }})
	if err != nil {
		t.Fatal(err)
	}
	// The daemon's early filter: drop an unmentioned group message only
	// when its room keeps no history and it does not address the bot all
	// the same (gatewayd dropUnmentioned).
	drop := func(in channels.Inbound) bool {
		return policy.MentionRequired(in) && !(d.KeepsHistory(in) || d.Addressed(in))
	}
	var adapters []channels.Adapter
	if r.tg != nil {
		a, err := telegram.New("default", telegram.Config{Token: r.tg.Token(), APIRoot: r.tg.URL, PollTimeoutSeconds: 1},
			telegram.Options{HTTPClient: r.tg.Client(), Logger: log, MentionRequired: drop, Choices: r.choices})
		if err != nil {
			t.Fatal(err)
		}
		adapters = append(adapters, a)
	}
	if r.dc != nil {
		a, err := discord.New("default", discord.Config{Token: "tok"},
			discord.Options{HTTPClient: r.dc.Client(), Logger: log, MentionRequired: drop, Choices: r.choices})
		if err != nil {
			t.Fatal(err)
		}
		adapters = append(adapters, a)
	}
	r.mgr, r.d = mgr, d
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, nil
	for _, a := range adapters {
		d.Register(a)
	}
	if _, err := d.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	for _, a := range adapters {
		done := make(chan error, 1)
		r.done = append(r.done, done)
		go func() { done <- a.Run(ctx, d.Handle) }()
	}
}

// stop ends the adapters, drains the dispatcher and closes the state.
func (r *roomRig) stop() {
	if r.d == nil {
		return
	}
	r.cancel()
	for _, done := range r.done {
		if err := <-done; err != nil {
			r.t.Errorf("adapter Run: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r.d.Shutdown(ctx)
	if err := r.mgr.Close(); err != nil {
		r.t.Errorf("close sessions: %v", err)
	}
	r.d = nil
}

// policyVerdict adapts the access policy as cmd/gateway does.
func policyVerdict(p *access.Policy) func(channels.Inbound) Verdict {
	return func(in channels.Inbound) Verdict {
		dec := p.Check(in)
		if !dec.Allowed() {
			return Verdict{Reply: dec.Reply, Reason: dec.Reason, Unaddressed: dec.Reason == access.ReasonNotMentioned}
		}
		return Verdict{Allow: true, Privileged: p.Privileged(in), AskPlatform: p.AskPlatform(in)}
	}
}

func newRoomRig(t *testing.T, r *roomRig) *roomRig {
	t.Helper()
	r.t = t
	if r.dir == "" {
		r.dir = t.TempDir()
	}
	r.model.SetReply(func(n int, _ openaitest.Request) openaitest.Reply { return openaitest.Reply{Text: "answer"} })
	r.start()
	t.Cleanup(r.stop)
	return r
}

func rigCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitModel waits for the model's n-th request and returns it.
func waitModel(t *testing.T, s *openaitest.Server, n int) openaitest.Request {
	t.Helper()
	eventually(t, "model request", func() bool { return len(s.Requests()) >= n })
	return s.Requests()[n-1]
}

// userTexts are the user messages of a request.
func userTexts(r openaitest.Request) []string {
	var out []string
	for _, m := range r.Body.Messages {
		if m.Role == "user" {
			out = append(out, m.Content)
		}
	}
	return out
}

// inOrder reports whether every part occurs in s, in the given order.
func inOrder(s string, parts ...string) bool {
	for _, p := range parts {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return true
}
