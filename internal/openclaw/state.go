package openclaw

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/gateway/gateway/internal/pairstate"
)

// pairChannels are the channels whose approvals come over: the ones the
// gateway serves with pairing. Their sender ids are numbers on both.
var pairChannels = map[string]bool{"telegram": true, "discord": true}

// numericID is a Telegram or Discord user id.
var numericID = regexp.MustCompile(`^[0-9]{1,32}$`)

// approval maps one allowlist entry of channel and account to an
// approval; ok is false (and the reason counted) when it cannot be.
func approval(channel, account, entry string, at time.Time, rep *Report) (pairstate.Approval, bool) {
	channel = strings.ToLower(channel)
	if account == "" {
		account = "default"
	}
	if !pairChannels[channel] {
		rep.add("pairing."+channel, "an allowlist of a channel the gateway does not serve: not imported")
		return pairstate.Approval{}, false
	}
	id := strings.TrimSpace(entry)
	for _, p := range []string{channel + ":", "tg:", "user:", "<@", "@"} {
		id = strings.TrimPrefix(id, p)
	}
	id = strings.TrimSuffix(id, ">")
	if id == "*" {
		rep.add("pairing.wildcard", `an allowlist entry "*" (anyone): the gateway's dmPolicy open says that, set it in the config; not imported`)
		return pairstate.Approval{}, false
	}
	if !numericID.MatchString(id) {
		rep.add("pairing.nonNumericEntry", "an allowlist entry that is not a user id (a @username): the gateway admits ids only; not imported")
		return pairstate.Approval{}, false
	}
	return pairstate.Approval{Channel: channel, AccountID: account, SenderID: id, ApprovedAt: at.UTC()}, true
}

// readState reads the global database state/openclaw.sqlite (when there
// is one): the pairing allowlists, the cron jobs of agents (all when
// empty), and counts of what has no place here.
func readState(dir, tmp string, agents []string, p *Plan) error {
	path := filepath.Join(dir, "state", "openclaw.sqlite")
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	db, err := copyDB(path, tmp, "state.sqlite")
	if err != nil {
		return fmt.Errorf("openclaw: %w", err)
	}
	defer db.Close()
	role, _, err := schemaVersion(db)
	if err != nil {
		return fmt.Errorf("openclaw: %s: no state schema version (schema_meta): %w", path, err)
	}
	if role != "global" && role != "state" {
		return fmt.Errorf("openclaw: %s: schema_meta says role %q, want global", path, role)
	}
	if err := readAllowEntries(db, p); err != nil && !missingTable(err) {
		return fmt.Errorf("openclaw: %s: channel_pairing_allow_entries: %w", path, err)
	}
	if err := readCronJobs(db, agents, p); err != nil && !missingTable(err) {
		return fmt.Errorf("openclaw: %s: cron_jobs: %w", path, err)
	}
	for _, t := range []struct{ table, why string }{
		{"channel_pairing_requests", "pending pairing codes (they expire within the hour): not imported; the sender asks again"},
		{"delivery_queue_entries", "OpenClaw's outbound queue: undelivered replies are not resent"},
		{"channel_ingress_events", "OpenClaw's inbound queue: unprocessed messages are not run"},
		{"subagent_runs", "subagent run records: the child sessions come over as sessions, the runs do not"},
		{"operator_approvals", "exec/plugin approvals: no gateway equivalent"},
	} {
		var n int
		// The table names are constants, never input.
		if db.QueryRow(`SELECT count(*) FROM `+t.table).Scan(&n) == nil {
			p.Report.addN("state."+t.table, n, t.why)
		}
	}
	return nil
}

func missingTable(err error) bool {
	return err != nil && strings.Contains(err.Error(), "no such table")
}

func readAllowEntries(db *sql.DB, p *Plan) error {
	rows, err := db.Query(`SELECT channel_key, account_id, entry, updated_at FROM channel_pairing_allow_entries
		ORDER BY channel_key, account_id, sort_order, entry`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var ch, acct, entry string
		var at int64
		if err := rows.Scan(&ch, &acct, &entry, &at); err != nil {
			return err
		}
		if a, ok := approval(ch, acct, entry, millis(at), p.Report); ok {
			p.Approvals = append(p.Approvals, a)
		}
	}
	return rows.Err()
}

// allowFile is the name of a JSON-era allowlist: <channel>-allowFrom.json
// (the default account) or <channel>-<account>-allowFrom.json.
var allowFile = regexp.MustCompile(`^([a-z0-9_]+)(?:-([a-z0-9_-]+))?-allowFrom\.json$`)

// readCredentials reads the JSON-era allowlists of dir/credentials.
func readCredentials(dir string, p *Plan) error {
	cdir := filepath.Join(dir, "credentials")
	ents, err := os.ReadDir(cdir)
	if err != nil {
		return nil
	}
	for _, e := range ents {
		m := allowFile.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		path := filepath.Join(cdir, e.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("openclaw: %w", err)
		}
		var list []string
		if err := json.Unmarshal(b, &list); err != nil {
			var w struct {
				AllowFrom []json.RawMessage `json:"allowFrom"`
			}
			if err := json.Unmarshal(b, &w); err != nil {
				return fmt.Errorf("openclaw: %s: want a list of sender ids or {\"allowFrom\": [...]}: %w", path, err)
			}
			for _, r := range w.AllowFrom {
				list = append(list, flexID(r))
			}
		}
		at := time.Now().UTC()
		if fi, err := e.Info(); err == nil {
			at = fi.ModTime().UTC()
		}
		for _, entry := range list {
			if a, ok := approval(m[1], m[2], entry, at, p.Report); ok {
				p.Approvals = append(p.Approvals, a)
			}
		}
	}
	return nil
}
