package discord

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
)

// notTakenNotice answers an interaction the gateway could not take.
const notTakenNotice = "The gateway cannot take commands right now; please try again shortly."

// interactionTTL is how long replies go through an interaction: Discord
// accepts its token for 15 minutes; the margin covers a slow send.
const interactionTTL = 15*time.Minute - 30*time.Second

// maxInteractionsQueued bounds interactions waiting for the worker.
const maxInteractionsQueued = 256

// interactions tracks whether each recent interaction has been
// acknowledged (its one callback spent), so that the first reply, a
// refusal and the deferral never race for it.
type interactions struct {
	mu    sync.Mutex
	appID string              // guarded by mu; from READY
	m     map[string]*ixState // guarded by mu; by interaction id
}

// ixState is one interaction's acknowledgement; mu is held across the
// callback so only one answer spends it.
type ixState struct {
	mu    sync.Mutex
	acked bool // guarded by mu
	// early: deferred before the Handler returned (ackWithin); filled:
	// the deferral's original response shows a reply since; done: the
	// Handler returned (no early deferral after that); guarded by mu.
	early, filled, done bool
	expires             time.Time
}

// ackWithin is how long an interaction waits for the Handler before it is
// deferred all the same: Discord drops one not acknowledged within 3
// seconds of its creation.
const ackWithin = 2 * time.Second

func (x *interactions) setApp(id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.appID = id
}

func (x *interactions) app() string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.appID
}

// state returns interaction id's state, creating it (acknowledged unless
// fresh) and forgetting expired ones. An interaction this process has not
// seen (a reply resumed after a restart) was acknowledged before.
func (x *interactions) state(id string, expires time.Time, fresh bool) *ixState {
	x.mu.Lock()
	defer x.mu.Unlock()
	if st, ok := x.m[id]; ok {
		return st
	}
	if x.m == nil {
		x.m = map[string]*ixState{}
	}
	now := time.Now()
	for k, st := range x.m {
		if now.After(st.expires) {
			delete(x.m, k)
		}
	}
	st := &ixState{acked: !fresh, expires: expires}
	x.m[id] = st
	return st
}

// startInteractions registers the handlers for slash commands (READY's
// application id, GUILD_CREATE registrations, INTERACTION_CREATE) and
// starts their workers; the returned function removes the handlers and
// waits for the workers. Interactions are served apart from messages, from
// registrations (which a rate limit may hold up) and, but for one
// member's in one channel, from each other (interactionLines), so that
// nothing delays their 3-second acknowledgement.
func (a *Adapter) startInteractions(ctx context.Context, h channels.Handler) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	regs := make(chan string, maxInteractionsQueued) // guild ids, "" for global
	ixs := make(chan *discordgo.Interaction, maxInteractionsQueued)
	register := func(guild string) {
		select {
		case regs <- guild:
		default:
			a.log.Warn("registration queue full", zap.String("guild_id", guild))
		}
	}
	mode := a.cfg.slashMode()
	removes := []func(){
		a.s.AddHandler(func(_ *discordgo.Session, r *discordgo.Ready) {
			switch {
			case r.Application != nil && r.Application.ID != "":
				a.ix.setApp(r.Application.ID)
			case r.User != nil:
				a.ix.setApp(r.User.ID)
			}
			if mode == SlashGlobal {
				register("")
			}
		}),
		a.s.AddHandler(func(_ *discordgo.Session, g *discordgo.GuildCreate) {
			if a.slashGuildCreated(g.Guild) {
				register(g.ID)
			}
		}),
		a.s.AddHandler(func(_ *discordgo.Session, i *discordgo.InteractionCreate) {
			if i.Interaction == nil || (i.Type != discordgo.InteractionApplicationCommand && i.Type != discordgo.InteractionMessageComponent) {
				return
			}
			select {
			case ixs <- i.Interaction:
			default:
				a.log.Warn("interaction queue full, command dropped", zap.String("interaction_id", i.ID))
			}
		}),
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		// Scopes registered: once per Run, not per reconnect. The worker
		// alone decides, with the access configuration in force when it
		// gets to a guild, so a registration queued before a reload that
		// drops its guild is not made. A failed registration is not
		// recorded: the guild's next GUILD_CREATE (a reconnect) or the next
		// reload tries again.
		registered := map[string]bool{}
		for {
			select {
			case <-ctx.Done():
				return
			case guild := <-regs:
				if !registered[guild] && (guild == "" || a.slashGuildNow(guild)) {
					registered[guild] = a.register(ctx, a.ix.app(), guild)
				}
			case <-a.resync:
				a.resyncGuilds(ctx, registered)
			case <-a.recommand:
				a.reregister(ctx, registered)
			}
		}
	})
	wg.Go(func() {
		lines := interactionLines{busy: map[string][]*discordgo.Interaction{}}
		for {
			select {
			case <-ctx.Done():
				return
			case i := <-ixs:
				lines.serve(ctx, &wg, i, func(i *discordgo.Interaction) { a.interaction(ctx, h, i) })
			}
		}
	})
	return func() {
		for _, rm := range removes {
			rm()
		}
		cancel()
		wg.Wait()
	}
}

// maxInteractionsServed bounds the interactions served at once.
const maxInteractionsServed = 16

// interactionLines serves interactions concurrently, except that one
// member's interactions in one channel are served in order, one at a
// time: Discord gives each interaction 3 seconds for its first answer, so
// one that is slow to be taken (a command the handler answers at once,
// such as /stop; a slow journal write) must not hold up everyone else's.
type interactionLines struct {
	slots chan struct{} // maxInteractionsServed; nil until first used

	mu   sync.Mutex
	busy map[string][]*discordgo.Interaction // by line; the first is being served
}

// line is the member and channel of i: interactions on one line keep
// their order.
func line(i *discordgo.Interaction) string {
	user := ""
	switch {
	case i.Member != nil && i.Member.User != nil:
		user = i.Member.User.ID
	case i.User != nil:
		user = i.User.ID
	}
	return i.ChannelID + "/" + user
}

// serve runs fn(i) on i's line: at once on a goroutine of wg if the line
// is idle, else after the interactions before it. It returns at once.
func (l *interactionLines) serve(ctx context.Context, wg *sync.WaitGroup, i *discordgo.Interaction, fn func(*discordgo.Interaction)) {
	if l.slots == nil {
		l.slots = make(chan struct{}, maxInteractionsServed)
	}
	key := line(i)
	l.mu.Lock()
	l.busy[key] = append(l.busy[key], i)
	idle := len(l.busy[key]) == 1
	l.mu.Unlock()
	if !idle {
		return
	}
	wg.Go(func() {
		for next := i; next != nil; next = l.done(key) {
			if ctx.Err() != nil {
				l.drop(key)
				return
			}
			select {
			case l.slots <- struct{}{}:
			case <-ctx.Done():
				l.drop(key)
				return
			}
			fn(next)
			<-l.slots
		}
	})
}

// done takes the interaction served on key off its line and returns the
// next one (nil: the line is idle).
func (l *interactionLines) done(key string) *discordgo.Interaction {
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.busy[key][1:]
	if len(q) == 0 {
		delete(l.busy, key)
		return nil
	}
	l.busy[key] = q
	return q[0]
}

// drop forgets key's line (shutting down).
func (l *interactionLines) drop(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.busy, key)
}

// interaction hands a slash command to h as a chat command and
// acknowledges it: deferred (ephemeral for private commands) once the
// command is accepted, unless a reply or a refusal already answered it.
func (a *Adapter) interaction(ctx context.Context, h channels.Handler, i *discordgo.Interaction) {
	if i.Type == discordgo.InteractionMessageComponent {
		a.press(ctx, h, i) // a choice button (choices.go)
		return
	}
	in, ok := a.interactionInbound(ctx, i)
	if !ok {
		a.respondNotice(ctx, i, "Unknown command. /help lists them.")
		return
	}
	st := a.ix.state(i.ID, in.Interaction.Expires, true)
	// Deferred all the same if the channel's lookup and the Handler take
	// long (slow storage, permissions looked up over REST).
	early := time.AfterFunc(ackWithin, func() { a.deferEarly(ctx, st, in.Interaction) })
	defer early.Stop()
	if in.GuildID != "" && !a.place(ctx, &in, i.ChannelID) {
		early.Stop()
		a.answerNotTaken(ctx, st, i, in.Interaction)
		return
	}
	a.adminFromInteraction(i, in)
	err := h(ctx, in)
	early.Stop() // a deferral under way holds st.mu
	st.mu.Lock()
	defer st.mu.Unlock()
	st.done = true
	if st.acked {
		if st.early && !st.filled && err != nil && ctx.Err() == nil {
			a.withdrawDeferral(ctx, in.Interaction, err)
		}
		return
	}
	switch {
	case err == nil:
		if err := a.deferReply(ctx, in.Interaction); err != nil && ctx.Err() == nil {
			a.log.Warn("interaction not acknowledged", zap.String("interaction_id", i.ID), zap.Error(err))
		}
		st.acked = true
	case errors.Is(err, channels.ErrRejected):
		// Refused by the access policy or a duplicate: like a message that
		// is not let through, it gets no answer.
	case ctx.Err() != nil:
		// Shutting down: nothing can answer it now.
	default:
		a.log.Warn("command not accepted", zap.String("interaction_id", i.ID), zap.Error(err))
		a.respondNotice(ctx, i, notTakenNotice)
		st.acked = true
	}
}

// deferEarly acknowledges ix with its deferral while the Handler still
// has it, unless something answered it already.
func (a *Adapter) deferEarly(ctx context.Context, st *ixState, ix *channels.Interaction) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.acked || st.done || ctx.Err() != nil {
		return
	}
	if err := a.deferReply(ctx, ix); err != nil {
		a.log.Warn("interaction not acknowledged", zap.String("interaction_id", ix.ID), zap.Error(err))
	}
	st.acked, st.early = true, true
}

// withdrawDeferral deletes the "thinking…" of an early deferral whose
// command was then refused (handlerErr; a notice went as an ephemeral
// followup) or not taken (its notice follows now, ephemeral). st.mu is
// held.
func (a *Adapter) withdrawDeferral(ctx context.Context, ix *channels.Interaction, handlerErr error) {
	di := &discordgo.Interaction{ID: ix.ID, AppID: ix.AppID, Token: ix.Token}
	if !errors.Is(handlerErr, channels.ErrRejected) {
		a.log.Warn("command not accepted", zap.String("interaction_id", ix.ID), zap.Error(handlerErr))
		_, err := a.s.FollowupMessageCreate(di, true, &discordgo.WebhookParams{Content: notTakenNotice,
			Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: &discordgo.MessageAllowedMentions{}}, discordgo.WithContext(ctx))
		if err != nil && ctx.Err() == nil {
			a.log.Warn("interaction notice not delivered", zap.String("interaction_id", ix.ID), zap.Error(err))
		}
	}
	if err := a.s.InteractionResponseDelete(di, discordgo.WithContext(ctx)); err != nil && ctx.Err() == nil {
		a.log.Warn("interaction deferral not withdrawn", zap.String("interaction_id", ix.ID), zap.Error(err))
	}
}

// answerNotTaken answers an interaction whose channel could not be looked
// up: with the notice, or after an early deferral with the notice as a
// followup and the deferral withdrawn.
func (a *Adapter) answerNotTaken(ctx context.Context, st *ixState, i *discordgo.Interaction, ix *channels.Interaction) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.done = true
	if st.acked {
		a.withdrawDeferral(ctx, ix, errors.New("channel not looked up"))
		return
	}
	a.respondNotice(ctx, i, notTakenNotice)
	st.acked = true
}

// interactionInbound turns an application command interaction into the
// chat command it stands for; ok is false for a command not in the
// catalogue.
func (a *Adapter) interactionInbound(ctx context.Context, i *discordgo.Interaction) (channels.Inbound, bool) {
	data := i.ApplicationCommandData()
	cmd, ok := a.command(data.Name)
	user := i.User
	if i.Member != nil && i.Member.User != nil {
		user = i.Member.User
	}
	if !ok || user == nil {
		return channels.Inbound{}, false
	}
	now := time.Now()
	in := channels.Inbound{
		Address: channels.Address{Channel: Name, AccountID: a.id, ChatID: i.ChannelID}, MessageID: i.ID,
		SenderID: user.ID, SenderName: user.Username, CaseSensitive: true,
		// A slash command is addressed to the bot.
		Mentioned: true, Text: commandText(cmd.Name, data.Options), Time: now,
		Interaction: &channels.Interaction{ID: i.ID, AppID: i.AppID, Token: i.Token, Private: cmd.Private,
			Expires: now.Add(interactionTTL)},
	}
	switch {
	case i.Member != nil && i.Member.Nick != "":
		in.SenderName = i.Member.Nick
	case user.GlobalName != "":
		in.SenderName = user.GlobalName
	}
	if i.GuildID == "" {
		in.ChatType = channels.Direct
		return in, true
	}
	in.ChatType, in.GuildID = channels.Channel, i.GuildID
	return in, true
}

func ephemeral(private bool) discordgo.MessageFlags {
	if private {
		return discordgo.MessageFlagsEphemeral
	}
	return 0
}

// deferReply acknowledges ix with a deferred response ("thinking…"), shown to
// the caller only for private commands.
func (a *Adapter) deferReply(ctx context.Context, ix *channels.Interaction) error {
	di := &discordgo.Interaction{ID: ix.ID, AppID: ix.AppID, Token: ix.Token}
	err := a.s.InteractionRespond(di, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseDeferredChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Flags: ephemeral(ix.Private)},
	}, discordgo.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("discord: interaction defer: %w", err)
	}
	return nil
}

// respondNotice answers an unacknowledged interaction with a short
// message only its caller sees.
func (a *Adapter) respondNotice(ctx context.Context, i *discordgo.Interaction, text string) {
	err := a.s.InteractionRespond(i, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: text, Flags: discordgo.MessageFlagsEphemeral,
			AllowedMentions: &discordgo.MessageAllowedMentions{}},
	}, discordgo.WithContext(ctx))
	if err != nil && ctx.Err() == nil {
		a.log.Warn("interaction notice not delivered", zap.String("interaction_id", i.ID), zap.Error(err))
	}
}

// tokenGone reports Discord refusing an interaction token that expired or
// that it does not know: the reply must go to the channel instead.
func tokenGone(err error) bool {
	var re *discordgo.RESTError
	if !errors.As(err, &re) || re.Response == nil {
		return false
	}
	switch re.Response.StatusCode {
	case http.StatusUnauthorized, http.StatusNotFound:
		return true
	}
	return false
}
