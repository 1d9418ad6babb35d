package api

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gateway/gateway/jobs"
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
		q := r.URL.Query()
		f := sessions.JobFilter{AgentID: q.Get("agent"), SessionKey: q.Get("session"), Active: q.Get("all") == ""}
		for name, v := range map[string]string{"agent": f.AgentID, "session": f.SessionKey} {
			if err := sessions.CheckID(name, v); v != "" && err != nil {
				writeError(w, http.StatusBadRequest, err.Error())
				return
			}
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
		if err != nil {
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
