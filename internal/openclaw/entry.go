package openclaw

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// mapKey maps a session key of the reference system to the gateway's
// (routing.Parse's canonical form): the forms both share (main, direct,
// group, channel, topic and thread, subagent) are the same text, "dm"
// becomes "direct", and a "room" peer kind (Matrix-style rooms) becomes
// "group". A key of another agent than the one whose store holds it, or
// of a form the gateway has no session for (cron:…, hook:…, a two-part
// agent key), is an error.
func mapKey(agent, key string) (string, error) {
	parts := strings.Split(key, ":")
	if len(parts) >= 5 && strings.EqualFold(parts[3], "room") {
		parts[3] = string(routing.Group)
	}
	k, err := routing.Parse(strings.Join(parts, ":"))
	if err != nil {
		return "", err
	}
	if k.Agent != agent {
		return "", fmt.Errorf("key of agent %q in agent %q's store", k.Agent, agent)
	}
	return k.String(), nil
}

// thinkingLevels maps the reference system's thinking levels to ours.
var thinkingLevels = map[string]string{"minimal": sessions.ThinkingLow, "xhigh": sessions.ThinkingHigh}

// mappedMembers are the members of an entry this package reads out of
// Extra into fields of sessions.Entry (they stay in Extra too, which the
// files backend keeps verbatim, so an export writes them back).
var mappedMembers = map[string]bool{"origin": true, "deliveryContext": true, "delivery": true, "subject": true,
	"sessionFile": true, "modelProvider": true}

// route is the origin or delivery context of an entry.
type route struct {
	Provider  string          `json:"provider"`
	Channel   string          `json:"channel"`
	Surface   string          `json:"surface"`
	ChatType  string          `json:"chatType"`
	From      string          `json:"from"`
	To        string          `json:"to"`
	AccountID string          `json:"accountId"`
	ThreadID  json.RawMessage `json:"threadId"`
}

// mapEntry completes the decoded entry e of key: the origin and delivery
// context read into the last-route fields where those are empty, the
// last route and delivery context's chat in the gateway's form
// (lastroute.go), levels checked, and the members it cannot map counted.
func mapEntry(key string, e sessions.Entry, rep *Report) sessions.Entry {
	e.SessionKey = key
	cleanEntryText(&e, rep)
	fill := func(dst *string, vals ...string) {
		for _, v := range vals {
			if *dst == "" {
				*dst = v
			}
		}
	}
	extra := map[string]json.RawMessage{}
	if e.Extra != "" {
		_ = json.Unmarshal([]byte(e.Extra), &extra) // the decoder wrote it from JSON
	}
	// Releases of 2026.9 nest both under delivery ({route, context,
	// origin}); older ones keep origin and deliveryContext at the top.
	var origin, delivery route
	var nested struct {
		Context *route `json:"context"`
		Origin  *route `json:"origin"`
	}
	if json.Unmarshal(extra["delivery"], &nested) == nil {
		if nested.Context != nil {
			delivery = *nested.Context
		}
		if nested.Origin != nil {
			origin = *nested.Origin
		}
	}
	// The top-level members, where present, are the older releases' own
	// (the entry decoder reads deliveryContext into its field).
	_ = json.Unmarshal(extra["origin"], &origin)
	_ = json.Unmarshal(extra["deliveryContext"], &delivery)
	if dc := e.DeliveryContext; dc != (sessions.DeliveryContext{}) {
		delivery = route{Channel: dc.Channel, To: dc.To, AccountID: dc.AccountID, ThreadID: json.RawMessage(strconv.Quote(dc.ThreadID))}
	}
	if e.DeliveryContext == (sessions.DeliveryContext{}) {
		e.DeliveryContext = sessions.DeliveryContext{Channel: delivery.Channel, To: delivery.To,
			AccountID: delivery.AccountID, ThreadID: flexID(delivery.ThreadID)}
	}
	var provider string
	_ = json.Unmarshal(extra["modelProvider"], &provider)
	fill(&e.Provider, provider)
	fill(&e.LastChannel, delivery.Channel, origin.Provider, origin.Channel)
	fill(&e.LastTo, delivery.To, origin.To)
	fill(&e.LastAccountID, delivery.AccountID, origin.AccountID)
	fill(&e.LastThreadID, flexID(delivery.ThreadID), flexID(origin.ThreadID))
	fill(&e.LastFrom, origin.From)
	e.LastFrom = gatewayFrom(e.LastFrom, rep)
	gatewayRoute(key, &e, rep)
	fill(&e.Channel, origin.Provider, origin.Channel, e.LastChannel)
	fill(&e.ChatType, origin.ChatType)
	if e.ChatType == "room" {
		e.ChatType = string(routing.Group)
	}
	var subject string
	_ = json.Unmarshal(extra["subject"], &subject)
	fill(&e.DisplayName, subject)
	if t, ok := thinkingLevels[strings.ToLower(e.ThinkingLevel)]; ok {
		e.ThinkingLevel = t
	}
	if t, err := sessions.ParseThinking(e.ThinkingLevel); err != nil {
		rep.add("entry.thinkingLevel="+e.ThinkingLevel, "a thinking level the gateway does not know: cleared")
		e.ThinkingLevel = ""
	} else {
		e.ThinkingLevel = t
	}
	if a, err := sessions.ParseActivation(e.GroupActivation); err != nil {
		rep.add("entry.groupActivation="+e.GroupActivation, "a group activation the gateway does not know: cleared")
		e.GroupActivation = ""
	} else {
		e.GroupActivation = a
	}
	names := make([]string, 0, len(extra))
	for k := range extra {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		if !mappedMembers[k] {
			rep.add("entry."+k, "no gateway field: kept as an unknown member by the files backend, dropped by sqlite and postgres")
		}
	}
	return e
}

// cleanEntryText makes e's text storable by every backend, as the gateway
// makes what chats send (sessions.Origin.Clean): invalid UTF-8 becomes
// U+FFFD, NUL bytes (which PostgreSQL text cannot hold) are dropped. Each
// field changed is counted.
func cleanEntryText(e *sessions.Entry, rep *Report) {
	for _, f := range []*string{&e.Title, &e.Channel, &e.ChatType, &e.LastChannel, &e.LastTo, &e.LastAccountID,
		&e.LastThreadID, &e.LastFrom, &e.DisplayName, &e.Model, &e.Provider, &e.ModelOverride, &e.QueueMode,
		&e.QueueDrop, &e.SpawnedBy, &e.ParentSessionKey, &e.Label, &e.ProviderOverride, &e.ThinkingLevel,
		&e.GroupActivation, &e.VerboseLevel, &e.ReasoningLevel, &e.SendPolicy, &e.ResponseUsage, &e.SubagentCleanup,
		&e.DeliveryContext.Channel, &e.DeliveryContext.To, &e.DeliveryContext.AccountID, &e.DeliveryContext.ThreadID} {
		if utf8.ValidString(*f) && !strings.ContainsRune(*f, 0) {
			continue
		}
		*f = strings.ReplaceAll(strings.ToValidUTF8(*f, "\uFFFD"), "\x00", "")
		rep.add("entry.text", "a text field with NUL bytes or invalid UTF-8: NUL dropped, invalid bytes made U+FFFD (as the gateway stores what chats send)")
	}
}

// flexID is an id written as a JSON string or number ("" for neither).
func flexID(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// settle gives e the clocks and counters of its transcript: the message
// count, a title from the first user message when it has none, and the
// clocks it lacks (a JSON-era entry keeps only updatedAt, which the
// decoder copies into the others).
func settle(e *sessions.Entry, t transcript, row clocks) {
	e.MessageCount = t.messages
	if e.Title == "" {
		e.Title = t.title
	}
	setIf := func(dst *time.Time, v time.Time) {
		if !v.IsZero() {
			*dst = v
		}
	}
	setIf(&e.CreatedAt, row.created)
	setIf(&e.LastInteractionAt, row.lastInteraction)
	setIf(&e.UpdatedAt, row.updated)
	fallback := row.updated
	if fallback.IsZero() {
		fallback = t.lastAt
	}
	for _, c := range []*time.Time{&e.UpdatedAt, &e.CreatedAt, &e.SessionStartedAt, &e.LastInteractionAt} {
		if c.IsZero() {
			*c = fallback
		}
	}
	if e.CreatedAt.IsZero() {
		now := time.Now().UTC()
		e.CreatedAt, e.SessionStartedAt, e.LastInteractionAt, e.UpdatedAt = now, now, now, now
	}
}

// clocks are the times a session row of the SQLite layout keeps beside
// its entry JSON (zero: not kept).
type clocks struct {
	created, lastInteraction, updated time.Time
}

// millis is a time of epoch milliseconds (zero for 0).
func millis(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}
