package openclaw

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/gateway/gateway/jobs"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// JobItem is one OpenClaw cron job of a plan and what an import makes of
// it: a gateway job, or the reason it has none.
type JobItem struct {
	SourceID string `json:"sourceId"`
	Agent    string `json:"agent"`
	Name     string `json:"name,omitempty"`
	// Job is the gateway job it becomes (nil: skipped, Why says why).
	Job *sessions.Job `json:"job,omitempty"`
	Why string        `json:"why,omitempty"`
	// Status is what Apply did or, dry, would do: StatusImport,
	// StatusPresent or StatusSkipped.
	Status string `json:"status,omitempty"`
	src    cronJob
}

// StatusSkipped: an OpenClaw cron job with no faithful gateway form (or a
// room full of jobs); JobItem.Why says which.
const StatusSkipped = "skipped"

// JobOptions are what MapJobs needs of the gateway's configuration.
type JobOptions struct {
	// Now is the present: one-shot times before it are past, and the
	// first occurrences are computed from it.
	Now time.Time
	// Zone is the time zone of agent's jobs (jobs.timezone), given to a
	// cron expression OpenClaw kept without one; nil is UTC.
	Zone func(agent string) *time.Location
	// Routing is the gateway's routing (dmScope, identity links): a room
	// gets the session key it gives that room for the job's agent (the
	// bindings aside: the job keeps its agent).
	Routing routing.Config
	// Serves reports whether the configuration serves channel's account;
	// nil serves all.
	Serves func(channel, account string) bool
}

// skip is why a cron job has no gateway form: the report's field, its
// reason, and a detail for the job's line.
type skip struct{ field, why, detail string }

// JobID is the gateway id of OpenClaw's cron job id: "oc" and 10 hex
// digits of its hash, the same on every import (so a second one finds the
// job present), without ':' (a job's occurrence ids embed it).
func JobID(sourceID string) string {
	h := sha256.Sum256([]byte(sourceID))
	return "oc" + hex.EncodeToString(h[:5])
}

// MapJobs decides, for each cron job of p, the gateway job it becomes
// (JobItem.Job) or why it has none (JobItem.Why, counted in the report).
// The shapes that map: an enabled job whose payload is text (systemEvent
// text, agentTurn message) on a cron (with its time zone), every (whole
// seconds, at least a minute) or future at schedule, that announces to a
// Telegram chat, group or topic of an account the config serves (the
// room's session for the job's agent), or that announces to "last" or is
// a main-session systemEvent (the job's session, or the agent's main
// session, when it is imported with a chat to deliver into).
func MapJobs(p *Plan, o JobOptions) {
	for i := range p.Jobs {
		it := &p.Jobs[i]
		j, sk := mapJob(p, it, o)
		if sk != nil {
			it.Job, it.Why = nil, sk.why
			if sk.detail != "" {
				it.Why += " (" + sk.detail + ")"
			}
			p.Report.add("cron_jobs."+sk.field, sk.why)
			continue
		}
		it.Job, it.Why = j, ""
	}
}

func mapJob(p *Plan, it *JobItem, o JobOptions) (*sessions.Job, *skip) {
	j := it.src
	switch {
	case j.DeclarationKey != "":
		return nil, &skip{"managed", "a job OpenClaw declares and manages itself (heartbeat, memory dreaming, skill review): its internals, not a user's; not imported", j.DeclarationKey}
	case j.Payload.Kind == "heartbeat":
		return nil, &skip{"payload=heartbeat", "OpenClaw's heartbeat: the gateway has none; not imported", ""}
	case j.Enabled != nil && !*j.Enabled:
		return nil, &skip{"disabled", "disabled in OpenClaw: not imported (a gateway job has no paused state to resume; add it with `gateway jobs add` when wanted)", ""}
	}
	var text string
	switch j.Payload.Kind {
	case "systemEvent":
		text = j.Payload.Text
	case "agentTurn":
		text = j.Payload.Message
	default:
		return nil, &skip{"payload=" + j.Payload.Kind, "a payload that is not text (a command, a script): the gateway's jobs deliver text; not imported", ""}
	}
	switch text = strings.TrimSpace(text); {
	case text == "":
		return nil, &skip{"emptyText", "a job with no text: not imported", ""}
	case len(text) > sessions.MaxJobText:
		return nil, &skip{"textTooLong", "a text longer than a gateway job holds (4000 bytes): not imported", ""}
	}
	sched, next, sk := schedule(j, it.Agent, o)
	if sk != nil {
		return nil, sk
	}
	target, key, sk := room(p, j, it.Agent, o)
	if sk != nil {
		return nil, sk
	}
	job, err := jobs.NewJob(jobs.Spec{AgentID: it.Agent, SessionKey: key, Target: target, Text: text, Schedule: sched}, o.Now)
	if err != nil {
		return nil, &skip{"invalid", "a job the gateway's scheduler refuses: not imported", err.Error()}
	}
	job.ID = JobID(it.SourceID)
	if !next.IsZero() {
		job.NextAt = next
	}
	if j.CreatedAtMs > 0 {
		job.CreatedAt = millis(j.CreatedAtMs)
	}
	if j.Schedule.Kind == "cron" && strings.TrimSpace(j.Schedule.TZ) == "" {
		p.Report.add("cron_jobs.schedule.noTimeZone", "a cron expression OpenClaw read in its host's time zone: imported in the agent's jobs.timezone")
	}
	return &job, nil
}

// schedule converts j's schedule; next, when not zero, is the first
// occurrence (an interval keeps OpenClaw's phase: its anchor plus whole
// intervals). A job deleted after its first run becomes a one-shot at its
// next occurrence, which is what OpenClaw runs of it.
func schedule(j cronJob, agent string, o JobOptions) (sessions.JobSchedule, time.Time, *skip) {
	s := j.Schedule
	switch s.Kind {
	case "at":
		at, ok := atTime(s.At, s.AtMs)
		if !ok {
			return sessions.JobSchedule{}, time.Time{}, &skip{"schedule.at", "a one-shot time that does not read: not imported", s.At}
		}
		if !at.After(o.Now) {
			return sessions.JobSchedule{}, time.Time{}, &skip{"atPassed", "a one-shot job whose time has passed (it ran, or OpenClaw was down then): not imported", at.Format(time.RFC3339)}
		}
		return sessions.JobSchedule{At: at.UTC()}, time.Time{}, nil
	case "every":
		ms, ok := flexInt(s.EveryMs)
		if ms > maxEvery.Milliseconds() {
			return sessions.JobSchedule{}, time.Time{}, &skip{"schedule.everyTooLong", "an interval longer than ten years: not imported", ""}
		}
		d := time.Duration(ms) * time.Millisecond
		if !ok || d < time.Minute || d%time.Second != 0 {
			return sessions.JobSchedule{}, time.Time{}, &skip{"schedule.every", "an interval shorter than a minute or not in whole seconds: the gateway repeats a job at most once a minute; not imported", ""}
		}
		anchor := o.Now
		if a, ok := flexInt(s.AnchorMs); ok {
			anchor = time.UnixMilli(max(a, 0)).UTC()
		} else if j.CreatedAtMs > 0 {
			anchor = millis(j.CreatedAtMs)
		}
		next := anchor
		if !o.Now.Before(anchor) {
			next = anchor.Add((o.Now.Sub(anchor)/d + 1) * d)
		}
		if j.DeleteAfterRun {
			return sessions.JobSchedule{At: next}, time.Time{}, nil
		}
		return sessions.JobSchedule{Cron: "@every " + everyText(d)}, next, nil
	case "cron":
		expr := strings.TrimSpace(cmp.Or(s.Expr, s.Cron))
		// croner reads a leading seconds field; at 0 it says no more than five fields.
		if f := strings.Fields(expr); len(f) == 6 && f[0] == "0" {
			expr = strings.Join(f[1:], " ")
		}
		tz := strings.TrimSpace(s.TZ)
		if tz == "" {
			tz = time.UTC.String()
			if o.Zone != nil && o.Zone(agent) != nil {
				tz = o.Zone(agent).String()
			}
		}
		sched := sessions.JobSchedule{Cron: expr, TZ: tz}
		if err := jobs.CheckSchedule(sched); err != nil {
			return sessions.JobSchedule{}, time.Time{}, &skip{"schedule.cron", "a cron expression or time zone the gateway's scheduler does not read (five fields or a descriptor; no L, W or #): not imported", err.Error()}
		}
		if j.DeleteAfterRun {
			n, err := jobs.Next(sched, o.Now)
			if err != nil || n.IsZero() {
				return sessions.JobSchedule{}, time.Time{}, &skip{"schedule.cronEnded", "a cron expression that fires no more: not imported", ""}
			}
			return sessions.JobSchedule{At: n}, time.Time{}, nil
		}
		return sched, time.Time{}, nil
	}
	return sessions.JobSchedule{}, time.Time{}, &skip{"schedule.kind=" + s.Kind, "a schedule kind the gateway does not know: not imported", ""}
}

// maxEvery bounds an interval (its milliseconds as a Duration must not
// overflow).
const maxEvery = 10 * 366 * 24 * time.Hour

// atTime reads a one-shot time: atMs, or at as OpenClaw writes it (ISO
// 8601; without a zone it is UTC; or epoch milliseconds).
func atTime(at string, atMs []byte) (time.Time, bool) {
	if ms, ok := flexInt(atMs); ok && ms > 0 {
		return millis(ms), true
	}
	at = strings.TrimSpace(at)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04"} {
		if t, err := time.Parse(layout, at); err == nil {
			return t.UTC(), true
		}
	}
	if ms, err := strconv.ParseInt(at, 10, 64); err == nil && ms > 0 {
		return millis(ms), true
	}
	return time.Time{}, false
}

// everyText writes d for "@every" (robfig/cron reads Go durations): "30m",
// "1h30m", "90s".
func everyText(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// delivery is where j's output goes as OpenClaw resolves it
// (src/cron/delivery-plan.ts): mode announce, none or webhook; channel
// "" or "last" for the last route.
func delivery(j cronJob) (mode, channel, to, account, thread string) {
	if d := j.Delivery; d != nil {
		mode = strings.ToLower(strings.TrimSpace(d.Mode))
		if mode == "" || mode == "deliver" {
			mode = "announce"
		}
		return mode, strings.ToLower(strings.TrimSpace(d.Channel)), strings.TrimSpace(d.To), strings.TrimSpace(d.AccountID), flexID(d.ThreadID)
	}
	if j.Payload.Kind == "agentTurn" {
		pl := j.Payload
		if (pl.Deliver != nil && *pl.Deliver) || pl.To != "" { // the legacy fields
			return "announce", strings.ToLower(strings.TrimSpace(pl.Channel)), strings.TrimSpace(pl.To), "", ""
		}
		if t := j.SessionTarget; t == "isolated" || t == "current" || strings.HasPrefix(t, "session:") {
			return "announce", "last", "", "", ""
		}
	}
	return "none", "", "", "", ""
}

// room returns the room j is delivered into and the session key it runs
// in: a named room's session (as the gateway's routing keys that room
// for the job's agent), or, for the last route and a main-session system
// event, the job's session (its sessionKey, else the agent's main one)
// with the chat it heard from last.
func room(p *Plan, j cronJob, agent string, o JobOptions) (sessions.JobTarget, string, *skip) {
	mode, channel, to, account, thread := delivery(j)
	switch {
	case mode == "webhook":
		return sessions.JobTarget{}, "", &skip{"delivery=webhook", "output posted to a webhook: the gateway's jobs arrive in a chat; not imported", ""}
	case mode == "announce" && to != "":
		t, sk := target(channel, to, account, thread, o)
		if sk != nil {
			return t, "", sk
		}
		key, err := roomKey(agent, t, o.Routing)
		if err != nil {
			return t, "", &skip{"delivery.target", "a delivery target the gateway's routing has no session for: not imported", err.Error()}
		}
		return t, key, nil
	case mode == "announce" || (j.Payload.Kind == "systemEvent" && (j.SessionTarget == "" || j.SessionTarget == "main")):
		return lastRoom(p, j, agent, o)
	case mode == "none":
		return sessions.JobTarget{}, "", &skip{"delivery=none", "an agent turn whose output goes to no chat (delivery none): a gateway job arrives in a chat's session and is answered there; not imported", ""}
	}
	return sessions.JobTarget{}, "", &skip{"delivery=" + mode, "a delivery mode the gateway does not know: not imported", ""}
}

// lastRoom is the session of j's last route and the chat it heard from last.
func lastRoom(p *Plan, j cronJob, agent string, o JobOptions) (sessions.JobTarget, string, *skip) {
	src := "agent:" + agent + ":main" // OpenClaw's main session
	switch {
	case strings.HasPrefix(j.SessionTarget, "session:"):
		src = strings.TrimPrefix(j.SessionTarget, "session:")
	case j.SessionKey != "":
		src = j.SessionKey
	}
	key, err := mapKey(agent, src)
	if err != nil {
		return sessions.JobTarget{}, "", &skip{"session.unmapped", "it goes to a session the gateway has no form for (cron:…, hook:…, another agent's): not imported", src}
	}
	e := p.entry(agent, key)
	if e == nil {
		return sessions.JobTarget{}, "", &skip{"session.absent", "it goes to a session that is not imported (the agent's main session, or the one it was set in): not imported", key}
	}
	if e.LastChannel == "" || e.LastTo == "" {
		return sessions.JobTarget{}, "", &skip{"session.noChat", "its session never heard from a chat, so no room to deliver into: not imported", key}
	}
	t, sk := target(strings.ToLower(e.LastChannel), e.LastTo, e.LastAccountID, e.LastThreadID, o)
	return t, key, sk
}

// entry returns agent's imported entry of key, or nil.
func (p *Plan) entry(agent, key string) *sessions.Entry {
	for _, a := range p.Agents {
		if a.ID != agent {
			continue
		}
		for _, k := range a.Keys {
			if k.Key == key {
				return k.Entry
			}
		}
	}
	return nil
}
