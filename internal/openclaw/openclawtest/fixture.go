// Package openclawtest builds OpenClaw state directories for tests of
// `gateway import openclaw`: an agent in the SQLite layout, created with
// the reference system's own DDL (testdata/*.sql, copied from its
// published package) and left with its rows in the -wal as a running
// OpenClaw leaves them, an agent in the JSON-era layout, and the global
// state database with pairing allowlists and cron jobs of each shape.
package openclawtest

import (
	"bytes"
	"database/sql"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	_ "modernc.org/sqlite" // the SQLite driver
)

//go:embed testdata/agent-schema.sql
var agentDDL string

//go:embed testdata/state-schema.sql
var stateDDL string

// Session ids of the fixture.
const (
	MainSession    = "0b7e3c55-9a53-4b43-9d6d-0d8e5a1f2c11" // agent:main:main
	TopicSession   = "1c8f4d66-ab64-4c54-8e7e-1e9f6b2a3d22" // agent:main:telegram:group:-1001:topic:7
	TopicEarlier   = "2d905e77-bc75-4d65-9f8f-2fa07c3b4e33" // its window before a reset
	CronSession    = "3ea16f88-cd86-4e76-a090-30b18d4c5f44" // agent:main:cron:nightly (no gateway form)
	OpsMainSession = "4fb27099-de97-4f87-b1a1-41c29e5d6055" // agent:ops:main (JSON era)
	OpsDMSession   = "50c381aa-efa8-4098-82b2-52d3af6e7166" // agent:ops:discord:dm:777 (JSON era)
)

// Expected is what an import of the fixture must bring over: each
// gateway key with its message count and the text of its last message.
var Expected = map[string]struct {
	Agent    string
	Messages int
	Last     string
}{
	"agent:main:main":                         {"main", 6, "Rain tomorrow."},
	"agent:main:telegram:group:-1001:topic:7": {"main", 2, "Pong from the topic."},
	"agent:ops:main":                          {"ops", 4, "Deployed v2."},
	"agent:ops:discord:direct:777":            {"ops", 2, "Hello from Discord."},
}

// BigResult is the tool result stored zstd-compressed.
var BigResult = strings.Repeat("Paris: sunny, 21°C, light wind from the west. ", 60)

var base = time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)

func at(min int) (string, int64) {
	t := base.Add(time.Duration(min) * time.Minute)
	return t.Format("2006-01-02T15:04:05.000Z"), t.UnixMilli()
}

// msg is one transcript entry of the fixture.
func msg(id, parent string, min int, role string, content any, extra map[string]any) string {
	ts, ms := at(min)
	m := map[string]any{"role": role, "content": content, "timestamp": ms}
	for k, v := range extra {
		m[k] = v
	}
	var p any
	if parent != "" {
		p = parent
	}
	return js(map[string]any{"type": "message", "id": id, "parentId": p, "timestamp": ts, "message": m})
}

func header(id string, min int) string {
	ts, _ := at(min)
	return js(map[string]any{"type": "session", "version": 3, "id": id, "timestamp": ts, "cwd": "/home/oc/.openclaw/workspace"})
}

func text(s string) []map[string]any { return []map[string]any{{"type": "text", "text": s}} }

func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// MainTranscript is agent:main:main's events: a tool pair (its result
// large enough to be stored compressed), an abandoned branch, a
// compaction, an extension entry and a last exchange.
func MainTranscript() (events []string, active []int) {
	ts, _ := at(5)
	events = []string{
		header(MainSession, 0),
		msg("a1", "", 1, "user", "What's the weather in Paris?", nil),
		msg("a2", "a1", 2, "assistant", []map[string]any{{"type": "toolCall", "id": "call_1", "name": "web_search", "arguments": map[string]any{"q": "paris weather"}}},
			map[string]any{"provider": "openai", "model": "gpt-4o", "stopReason": "toolUse", "usage": map[string]any{"input": 100, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 120}}),
		msg("a3", "a2", 2, "toolResult", text(BigResult), map[string]any{"toolCallId": "call_1", "toolName": "web_search", "isError": false}),
		msg("a4", "a3", 3, "assistant", text("Sunny, 21°C."), map[string]any{"provider": "openai", "model": "gpt-4o", "stopReason": "stop"}),
		msg("b1", "a4", 4, "user", text("An abandoned question"), nil),
		msg("b2", "b1", 4, "assistant", text("An abandoned answer"), nil),
		js(map[string]any{"type": "compaction", "id": "c1", "parentId": "a4", "timestamp": ts, "summary": "The user asked about the weather in Paris: sunny.", "firstKeptEntryId": "a4", "tokensBefore": 90000}),
		js(map[string]any{"type": "custom", "id": "x1", "parentId": "c1", "timestamp": ts, "customType": "memory-flush", "data": map[string]any{}}),
		msg("a5", "x1", 6, "user", "And tomorrow?", nil),
		msg("a6", "a5", 7, "assistant", text("Rain tomorrow."), map[string]any{"provider": "openai", "model": "gpt-4o", "stopReason": "stop"}),
	}
	return events, []int{1, 2, 3, 4, 7, 8, 9, 10}
}

// Build writes the fixture state dir under dir (created) and returns it.
func Build(t testing.TB, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	buildMainAgent(t, dir)
	buildOpsAgent(t, dir)
	buildState(t, dir)
	return dir
}

// withWAL creates the database at path with ddl, runs fill, and leaves
// the database file and its -wal in place as a process that still has it
// open does (the rows only in the -wal), without the -shm.
func withWAL(t testing.TB, path, ddl string, fill func(db *sql.DB)) {
	t.Helper()
	scratch := t.TempDir()
	tmp := filepath.Join(scratch, "db.sqlite")
	db, err := sql.Open("sqlite", "file:"+tmp+"?_pragma=journal_mode(WAL)&_pragma=wal_autocheckpoint(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(ddl); err != nil {
		t.Fatalf("ddl of %s: %v", path, err)
	}
	// The DDL is checkpointed into the main file; the rows stay in the WAL.
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	fill(db)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, ext := range []string{"", "-wal"} {
		copyFile(t, tmp+ext, path+ext)
	}
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("fixture %s has no WAL: %v", path, err)
	}
}

func copyFile(t testing.TB, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

func exec(t testing.TB, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func buildMainAgent(t testing.TB, dir string) {
	path := filepath.Join(dir, "agents", "main", "agent", "openclaw-agent.sqlite")
	withWAL(t, path, agentDDL, func(db *sql.DB) {
		_, now := at(60)
		exec(t, db, `INSERT INTO schema_meta VALUES ('primary', 'agent', 23, 'main', '2026.9.6', ?, ?)`, now, now)
		node := func(key, sid string, entry map[string]any, created, last int64) {
			exec(t, db, `INSERT INTO session_nodes (session_key, current_session_id, entry_json, entry_valid, updated_at, created_at, last_interaction_at)
				VALUES (?, ?, ?, 1, ?, ?, ?)`, key, sid, js(entry), now, created, last)
		}
		win := func(sid, key, reason string, created int64) {
			exec(t, db, `INSERT INTO session_windows (session_id, session_key, reason, created_at, updated_at, started_at) VALUES (?, ?, ?, ?, ?, ?)`,
				sid, key, reason, created, now, created)
		}
		events := func(sid string, evs []string, active []int) {
			enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
			defer enc.Close()
			for seq, e := range evs {
				if len(e) >= 1024 {
					nav := js(map[string]any{"version": 1, "report": map[string]any{"kind": "canonical"}, "navigation": map[string]any{},
						"reset": map[string]any{}, "model": map[string]any{}, "modelBytes": len(e), "modelWithoutCheckpointBytes": len(e), "withoutCustomDataBytes": len(e)})
					exec(t, db, `INSERT INTO transcript_events (session_id, seq, event_json, created_at, event_zstd, event_utf8_bytes, navigation_json) VALUES (?, ?, NULL, ?, ?, ?, ?)`,
						sid, seq, now, enc.EncodeAll([]byte(e), nil), len(e), nav)
					continue
				}
				exec(t, db, `INSERT INTO transcript_events (session_id, seq, event_json, created_at) VALUES (?, ?, ?, ?)`, sid, seq, e, now)
			}
			for pos, seq := range active {
				exec(t, db, `INSERT INTO session_transcript_active_events (session_id, active_position, event_seq) VALUES (?, ?, ?)`, sid, pos, seq)
			}
		}
		_, c0 := at(0)
		node("agent:main:main", MainSession, map[string]any{"sessionId": MainSession, "updatedAt": now, "sessionStartedAt": c0,
			"chatType": "direct", "inputTokens": 100, "outputTokens": 20, "totalTokens": 120, "compactionCount": 1,
			"modelProvider": "openai", "model": "gpt-4o",
			// The 2026.9 form: route, context and origin under delivery.
			"delivery": map[string]any{"kind": "external",
				"route":   map[string]any{"channel": "telegram", "accountId": "default", "target": map[string]any{"to": "telegram:555"}},
				"context": map[string]any{"channel": "telegram", "to": "telegram:555", "accountId": "default"},
				"origin":  map[string]any{"provider": "telegram", "surface": "telegram", "chatType": "direct", "from": "telegram:555", "to": "telegram:555"}},
			"skillsSnapshot": map[string]any{"prompt": "..."}}, c0, now)
		win(MainSession, "agent:main:main", "initial", c0)
		evs, active := MainTranscript()
		events(MainSession, evs, active)

		_, c1 := at(20)
		node("agent:main:telegram:group:-1001:topic:7", TopicSession, map[string]any{"sessionId": TopicSession, "updatedAt": now,
			"chatType": "group", "groupActivation": "always", "thinkingLevel": "high", "modelOverride": "claude-sonnet", "providerOverride": "anthropic",
			"subject":         "Ops room",
			"deliveryContext": map[string]any{"channel": "telegram", "to": "telegram:-1001", "accountId": "default", "threadId": 7}}, c1, now)
		win(TopicEarlier, "agent:main:telegram:group:-1001:topic:7", "initial", c0)
		win(TopicSession, "agent:main:telegram:group:-1001:topic:7", "reset", c1)
		events(TopicEarlier, []string{header(TopicEarlier, 10),
			msg("e1", "", 11, "user", "Before the reset", nil),
			msg("e2", "e1", 12, "assistant", text("Noted."), nil)}, nil)
		events(TopicSession, []string{header(TopicSession, 20),
			msg("t1", "", 21, "user", "ping the topic", nil),
			msg("t2", "t1", 22, "assistant", text("Pong from the topic."), nil)}, nil)

		node("agent:main:cron:nightly", CronSession, map[string]any{"sessionId": CronSession, "updatedAt": now}, c1, now)
		win(CronSession, "agent:main:cron:nightly", "initial", c1)
		events(CronSession, []string{header(CronSession, 30), msg("n1", "", 31, "user", "nightly run", nil)}, nil)
	})
}

func buildOpsAgent(t testing.TB, dir string) {
	sdir := filepath.Join(dir, "agents", "ops", "sessions")
	if err := os.MkdirAll(sdir, 0o700); err != nil {
		t.Fatal(err)
	}
	_, ms := at(50)
	idx := map[string]any{
		"agent:ops:main": map[string]any{"sessionId": OpsMainSession, "updatedAt": ms, "chatType": "direct",
			"lastChannel": "telegram", "lastTo": "telegram:555", "modelOverride": "gpt-4o", "providerOverride": "openai",
			"thinkingLevel": "minimal", "sessionFile": "/home/oc/.openclaw/agents/ops/sessions/" + OpsMainSession + ".jsonl",
			"skillsSnapshot": map[string]any{"prompt": "..."}},
		"agent:ops:discord:dm:777": map[string]any{"sessionId": OpsDMSession, "updatedAt": ms, "inputTokens": 10, "lastThreadId": 42},
	}
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(sdir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("sessions.json", js(idx))
	write(OpsMainSession+".jsonl", strings.Join([]string{
		header(OpsMainSession, 40),
		msg("o1", "", 41, "user", "Deploy v1", nil),
		msg("o2", "o1", 42, "assistant", text("Deployed v1."), nil),
		msg("o3", "o2", 43, "user", text("An edited-away message"), nil),
		msg("o4", "o2", 44, "user", text("Deploy v2"), nil),
		msg("o5", "o4", 45, "assistant", text("Deployed v2."), nil),
	}, "\n")+"\n")
	write(OpsDMSession+".jsonl", strings.Join([]string{
		header(OpsDMSession, 46),
		msg("d1", "", 47, "user", "hi", nil),
		msg("d2", "d1", 48, "assistant", text("Hello from Discord."), nil),
	}, "\n")+"\n")
	write("9a9a9a9a-0000-4000-8000-000000000000.jsonl.reset.2026-08-01T00-00-00.000Z", header("9a9a9a9a-0000-4000-8000-000000000000", 0)+"\n")
	cdir := filepath.Join(dir, "credentials")
	if err := os.MkdirAll(cdir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cdir, "discord-allowFrom.json"), []byte(`{"version":1,"allowFrom":["333"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
}

func buildState(t testing.TB, dir string) {
	path := filepath.Join(dir, "state", "openclaw.sqlite")
	withWAL(t, path, stateDDL, func(db *sql.DB) {
		_, now := at(60)
		exec(t, db, `INSERT INTO schema_meta VALUES ('primary', 'global', 18, NULL, '2026.9.6', ?, ?)`, now, now)
		for i, e := range []struct{ ch, acct, entry string }{
			{"telegram", "default", "111"}, {"telegram", "default", "@bob"}, {"discord", "default", "222"},
			{"whatsapp", "default", "+15550001"}, {"telegram", "default", "*"},
		} {
			exec(t, db, `INSERT INTO channel_pairing_allow_entries VALUES (?, ?, ?, ?, ?)`, e.ch, e.acct, e.entry, i, now)
		}
		exec(t, db, `INSERT INTO channel_pairing_requests VALUES ('telegram', 'default', 'r1', 'ABCD1234', '2026-09-01T10:00:00Z', '2026-09-01T10:00:00Z', NULL)`)
		for _, j := range cronJobs() {
			enabled := 1
			if j["enabled"] == false {
				enabled = 0
			}
			var decl any
			if d, ok := j["declarationKey"]; ok {
				decl = d
			}
			payload, _ := j["payload"].(map[string]any)
			agent, _ := j["agentId"].(string)
			exec(t, db, `INSERT INTO cron_jobs (store_key, job_id, declaration_key, name, enabled, agent_id, payload_kind, job_json, state_json, updated_at)
				VALUES ('/home/oc/.openclaw/cron/jobs.json', ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				j["id"], decl, j["name"], enabled, agent, payload["kind"], js(j), js(map[string]any{"nextRunAtMs": base.UnixMilli()}), now)
		}
	})
}

// JobWant is what an import makes of one of the fixture's cron jobs: the
// gateway job's agent, session key, room ("channel/account/chat" and
// ":thread" for a thread or topic), text and schedule (Cron and TZ, or At
// for a one-shot), or, when it is skipped, the report field of why.
type JobWant struct {
	Agent, Key, Room, Text string
	Cron, TZ               string
	At                     time.Time
	Skip                   string
}

// Jobs are the fixture's cron jobs by OpenClaw job id, with what an
// import into a config serving Telegram's default account, in dmScope
// per-channel-peer and jobs.timezone TZ, makes of them. A job without a
// time zone gets TZ: the test's config must say jobs.timezone: TZ.
var Jobs = map[string]JobWant{
	// A weekday cron in Berlin time announcing to a forum topic.
	"standup": {Agent: "main", Key: "agent:main:telegram:group:-1001:topic:7", Room: "telegram/default/-1001:7",
		Text: "Post the stand-up reminder", Cron: "0 9 * * 1-5", TZ: "Europe/Berlin"},
	// Every two hours into the main session: its last chat, the DM.
	"water": {Agent: "main", Key: "agent:main:main", Room: "telegram/default/555", Text: "Drink some water", Cron: "@every 2h"},
	// A one-shot announced to a DM: the DM's own session (per-channel-peer).
	"dentist": {Agent: "main", Key: "agent:main:telegram:direct:555", Room: "telegram/default/555", Text: "Dentist at 10:00",
		At: time.Date(2030, 3, 1, 8, 30, 0, 0, time.UTC)},
	// A system event set in the topic, no time zone: the agent's.
	"report": {Agent: "main", Key: "agent:main:telegram:group:-1001:topic:7", Room: "telegram/default/-1001:7",
		Text: "Morning report", Cron: "30 7 * * *", TZ: TZ},
	"heartbeat":   {Skip: "cron_jobs.managed"},
	"paused":      {Skip: "cron_jobs.disabled"},
	"digest":      {Skip: "cron_jobs.delivery=none"},
	"ops-discord": {Skip: "cron_jobs.channel=discord"},
	"expired":     {Skip: "cron_jobs.atPassed"},
}

// TZ is the jobs.timezone the fixture's jobs expect.
const TZ = "America/New_York"

// cronJobs are the fixture's rows of cron_jobs, as OpenClaw's job_json.
func cronJobs() []map[string]any {
	_, created := at(0)
	job := func(id, agent string, sched, payload map[string]any, extra map[string]any) map[string]any {
		j := map[string]any{"id": id, "agentId": agent, "name": id, "enabled": true, "createdAtMs": created, "updatedAtMs": created,
			"schedule": sched, "sessionTarget": "isolated", "wakeMode": "now", "payload": payload, "state": map[string]any{}}
		for k, v := range extra {
			j[k] = v
		}
		return j
	}
	turn := func(m string) map[string]any { return map[string]any{"kind": "agentTurn", "message": m} }
	event := func(m string) map[string]any { return map[string]any{"kind": "systemEvent", "text": m} }
	main := map[string]any{"sessionTarget": "main"}
	return []map[string]any{
		job("standup", "main", map[string]any{"kind": "cron", "expr": "0 9 * * 1-5", "tz": "Europe/Berlin"}, turn("Post the stand-up reminder"),
			map[string]any{"delivery": map[string]any{"mode": "announce", "channel": "telegram", "to": "-1001", "threadId": 7}}),
		job("water", "main", map[string]any{"kind": "every", "everyMs": 7200000, "anchorMs": created}, event("Drink some water"), main),
		job("dentist", "main", map[string]any{"kind": "at", "at": "2030-03-01T08:30:00.000Z"}, turn("Dentist at 10:00"),
			map[string]any{"deleteAfterRun": true, "delivery": map[string]any{"mode": "announce", "to": "telegram:555"}}),
		job("report", "main", map[string]any{"kind": "cron", "expr": "30 7 * * *"}, event("Morning report"),
			map[string]any{"sessionTarget": "main", "sessionKey": "agent:main:telegram:group:-1001:topic:7"}),
		job("heartbeat", "main", map[string]any{"kind": "every", "everyMs": 1800000}, map[string]any{"kind": "heartbeat"},
			map[string]any{"sessionTarget": "main", "declarationKey": "heartbeat:main"}),
		job("paused", "main", map[string]any{"kind": "cron", "expr": "0 8 * * *", "tz": "UTC"}, turn("Paused one"),
			map[string]any{"enabled": false, "delivery": map[string]any{"mode": "announce", "channel": "telegram", "to": "555"}}),
		job("digest", "main", map[string]any{"kind": "cron", "expr": "0 6 * * *"}, turn("Summarise the inbox into notes"),
			map[string]any{"delivery": map[string]any{"mode": "none"}}),
		job("ops-discord", "ops", map[string]any{"kind": "cron", "expr": "0 12 * * *", "tz": "UTC"}, turn("Lunch"),
			map[string]any{"delivery": map[string]any{"mode": "announce", "channel": "discord", "to": "channel:999"}}),
		job("expired", "main", map[string]any{"kind": "at", "at": "2026-08-01T09:00:00Z"}, turn("Too late"),
			map[string]any{"delivery": map[string]any{"mode": "announce", "channel": "telegram", "to": "555"}}),
	}
}

// Snapshot returns every file under dir with its mode and content, to
// tell that an import left the source as it was.
func Snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if fi.IsDir() {
			out[rel] = fmt.Sprintf("dir %v %v", fi.Mode(), fi.ModTime().UnixNano())
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[rel] = fmt.Sprintf("%v %v %x", fi.Mode(), fi.ModTime().UnixNano(), bytes.Clone(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// AddCronJob adds job (OpenClaw's job_json: id, agentId, schedule,
// payload, delivery, ...) to the state database of the fixture at dir,
// enabled, for a test that needs a job of its own (one due in seconds).
func AddCronJob(t testing.TB, dir string, job map[string]any) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "state", "openclaw.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	payload, _ := job["payload"].(map[string]any)
	_, now := at(60)
	exec(t, db, `INSERT INTO cron_jobs (store_key, job_id, name, enabled, agent_id, payload_kind, job_json, updated_at)
		VALUES ('/home/oc/.openclaw/cron/jobs.json', ?, ?, 1, ?, ?, ?, ?)`, job["id"], job["id"], job["agentId"], payload["kind"], js(job), now)
}
