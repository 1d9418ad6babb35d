package api

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/jobs"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions"
)

// JobSettings serve the scheduled jobs' routes over Options.Sessions.
type JobSettings struct {
	// Zone is the time zone of an agent's jobs (jobs.timezone); nil: UTC.
	Zone func(agentID string) *time.Location
	// MaxPerRoom is the bound on a room's active jobs in force
	// (jobs.maxPerRoom, read at each add so a reload applies); nil or 0:
	// jobs.DefaultMaxPerRoom.
	MaxPerRoom func() int
	// Added is told of each job added (the scheduler wakes); may be nil.
	Added func()
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// jobRoutes serves the scheduled jobs (issue 24, `gateway jobs` offline):
//
//	GET    /api/jobs[?agent=&session=&all=1]  -> {jobs: [...]} due first (all: ended ones too)
//	POST   /api/jobs {session, when}          -> 201 {job}; 400 naming what is wrong (when holds the time
//	                                             and the text, as /remind reads them)
//	DELETE /api/jobs/{id}                     -> {removed: id}; 404
func (s *Server) jobRoutes() {
	if s.opts.Jobs == nil || s.opts.Sessions == nil {
		return
	}
	o := *s.opts.Jobs
	now := o.Now
	if now == nil {
		now = time.Now
	}
	store := func() sessions.Jobs { return s.opts.Sessions.Jobs() }
	s.allow("/api/jobs", "GET", "POST")
	s.allow("/api/jobs/{id}", "DELETE")
	s.mux.Handle("GET /api/jobs", s.auth(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := jobFilter(r.URL.Query())
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		js, err := store().ListJobs(r.Context(), f)
		if err != nil {
			s.log.Error("listing jobs failed", zap.Error(err))
			writeError(w, http.StatusInternalServerError, "jobs unreadable: "+err.Error())
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"jobs": js})
	})))
	s.mux.Handle("POST /api/jobs", s.auth(limitBody(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Session string `json:"session"`
			When    string `json:"when"`
		}
		if !decodeJSON(w, r, &body, false) {
			return
		}
		if strings.TrimSpace(body.Session) == "" || strings.TrimSpace(body.When) == "" {
			writeError(w, http.StatusBadRequest, `want {"session": "<session key>", "when": "<when> <text>"}`)
			return
		}
		j, err := jobs.ForSession(r.Context(), s.opts.Sessions, body.Session, body.When, o.Zone, now())
		switch {
		case errors.Is(err, jobs.ErrStorage):
			s.log.Error("reading the job's session failed", zap.Error(err))
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		case err != nil:
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		err = jobs.Add(r.Context(), store(), j, jobs.Limit(o.MaxPerRoom))
		switch {
		case errors.Is(err, jobs.ErrTooMany):
			writeError(w, http.StatusConflict, err.Error())
			return
		case err != nil:
			s.log.Error("adding a job failed", zap.Error(err))
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		if o.Added != nil {
			o.Added()
		}
		writeJSON(w, http.StatusCreated, map[string]any{"job": j})
	}))))
	s.mux.Handle("DELETE /api/jobs/{id}", s.auth(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := sessions.CheckID("job", r.PathValue("id")); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		err := store().RemoveJob(r.Context(), r.PathValue("id"))
		switch {
		case errors.Is(err, sessions.ErrNoJob):
			writeError(w, http.StatusNotFound, err.Error())
			return
		case err != nil:
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"removed": r.PathValue("id")})
	})))
}

// jobFilter reads GET /api/jobs's parameters: the agent id and session
// key as every other route accepts them (any case, spaces around; the
// store matches them as stored), all as a boolean. A parameter it does not
// know, or a value it cannot read, is an error naming it.
func jobFilter(q url.Values) (sessions.JobFilter, error) {
	var f sessions.JobFilter
	for name := range q {
		switch name {
		case "agent", "session", "all":
		default:
			return f, fmt.Errorf("unknown parameter %s; use agent, session, all", name)
		}
	}
	if v := strings.TrimSpace(q.Get("agent")); v != "" {
		a, err := routing.NormalizeID(v)
		if err != nil || sessions.CheckID("agent", v) != nil {
			return f, fmt.Errorf("agent %q: not an agent id", v)
		}
		f.AgentID = a
	}
	if v := strings.TrimSpace(q.Get("session")); v != "" {
		k, err := routing.Parse(v)
		if err != nil {
			return f, fmt.Errorf("session: %w", err)
		}
		f.SessionKey = k.String()
	}
	all := false
	if v := strings.TrimSpace(q.Get("all")); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return f, fmt.Errorf("all %q: want 1, 0, true or false", v)
		}
		all = b
	}
	f.Active = !all
	return f, nil
}
