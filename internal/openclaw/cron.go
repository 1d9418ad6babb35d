package openclaw

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gateway/gateway/routing"
)

// cronJob is one row of OpenClaw's cron_jobs table: its job_json (the
// CronJob of OpenClaw's src/cron/types.ts) and the columns beside it.
type cronJob struct {
	ID             string `json:"id"`
	AgentID        string `json:"agentId"`
	SessionKey     string `json:"sessionKey"`
	Name           string `json:"name"`
	DeclarationKey string `json:"declarationKey"`
	Enabled        *bool  `json:"enabled"`
	DeleteAfterRun bool   `json:"deleteAfterRun"`
	CreatedAtMs    int64  `json:"createdAtMs"`
	Schedule       struct {
		Kind     string          `json:"kind"`
		At       string          `json:"at"`
		AtMs     json.RawMessage `json:"atMs"`
		EveryMs  json.RawMessage `json:"everyMs"`
		AnchorMs json.RawMessage `json:"anchorMs"`
		Expr     string          `json:"expr"`
		Cron     string          `json:"cron"`
		TZ       string          `json:"tz"`
	} `json:"schedule"`
	SessionTarget string `json:"sessionTarget"`
	Payload       struct {
		Kind    string `json:"kind"`
		Text    string `json:"text"`
		Message string `json:"message"`
		// The legacy delivery fields of an agentTurn (before delivery).
		Deliver *bool  `json:"deliver"`
		Channel string `json:"channel"`
		To      string `json:"to"`
	} `json:"payload"`
	Delivery *cronDelivery `json:"delivery"`
}

// cronDelivery is where an OpenClaw job's output goes.
type cronDelivery struct {
	Mode      string          `json:"mode"`
	Channel   string          `json:"channel"`
	To        string          `json:"to"`
	AccountID string          `json:"accountId"`
	ThreadID  json.RawMessage `json:"threadId"`
}

// readCronJobs reads the cron jobs of the selected agents (all when
// agents is empty) into p.Jobs, to be mapped by MapJobs. A row whose
// job_json does not decode is counted, not fatal: the sessions still come.
func readCronJobs(db *sql.DB, agents []string, p *Plan) error {
	rows, err := db.Query(`SELECT job_id, COALESCE(declaration_key, ''), enabled, COALESCE(agent_id, ''), job_json
		FROM cron_jobs ORDER BY store_key, sort_order, updated_at, job_id`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id, decl, agent, js string
		var enabled int64
		if err := rows.Scan(&id, &decl, &enabled, &agent, &js); err != nil {
			return err
		}
		var j cronJob
		if err := json.Unmarshal([]byte(js), &j); err != nil {
			p.Report.add("cron_jobs.badJSON", "a cron job whose job_json does not decode: not imported")
			continue
		}
		j.ID = id
		if j.DeclarationKey == "" {
			j.DeclarationKey = decl
		}
		if enabled == 0 {
			f := false
			j.Enabled = &f
		}
		if agent == "" {
			agent = j.AgentID
		}
		if agent == "" {
			agent = "main" // OpenClaw's default agent id
		}
		a, err := routing.NormalizeID(agent)
		if err != nil {
			p.Report.add("cron_jobs.badAgent", "a cron job of an agent id the gateway does not read: not imported")
			continue
		}
		j.AgentID = a
		if len(agents) > 0 && !slices.Contains(agents, a) {
			continue
		}
		p.Jobs = append(p.Jobs, JobItem{SourceID: id, Agent: a, Name: j.Name, src: j})
	}
	return rows.Err()
}

// flexInt reads a number written as a JSON number or a numeric string
// (OpenClaw coerces both); ok is false for neither.
func flexInt(raw json.RawMessage) (int64, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return 0, false
	}
	var f float64
	if json.Unmarshal(raw, &f) == nil {
		return int64(f), true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
			return int64(f), true
		}
	}
	return 0, false
}

// String describes a JobItem for errors.
func (it JobItem) String() string { return fmt.Sprintf("cron job %s (%s)", it.SourceID, it.Name) }
