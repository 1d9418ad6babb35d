package filestore

import (
	"context"
	"github.com/gateway/gateway/sessions"
	"path/filepath"
	"time"
)

// Backend returns m as the storage seam's files backend.
func (m *Manager) Backend() sessions.Backend { return filesBackend{m} }

// filesBackend is the files implementation of Backend: the Manager's
// stores, journal and room history under the state dir.
type filesBackend struct{ m *Manager }

// filesStore adapts *Store to AgentStore (its transcripts are *transcript.File).
type filesStore struct{ *Store }

func (s filesStore) TranscriptOf(e sessions.Entry) (sessions.TranscriptLog, error) {
	t, err := s.Store.TranscriptOf(e)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// Transcript opens session sessionID's transcript, current or archived
// (an archived one read-only).
func (s filesStore) Transcript(sessionID string) (sessions.TranscriptLog, error) {
	t, err := s.transcriptOrArchive(sessionID)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// StoreOf returns the files store behind an AgentStore of the files
// backend (nil for another backend): the doctor and tests reach file paths
// through it.
func StoreOf(s sessions.AgentStore) *Store {
	if fs, ok := s.(filesStore); ok {
		return fs.Store
	}
	return nil
}

// ManagerOf returns the Manager behind the files backend (nil for
// another backend).
func ManagerOf(b sessions.Backend) *Manager {
	if fb, ok := b.(filesBackend); ok {
		return fb.m
	}
	return nil
}

func (b filesBackend) Kind() string { return "files" }

func (b filesBackend) Store(agentID string) (sessions.AgentStore, error) {
	st, err := b.m.Store(agentID)
	if err != nil {
		return nil, err
	}
	return filesStore{st}, nil
}

func (b filesBackend) Agents() ([]string, error)                   { return b.m.Agents() }
func (b filesBackend) Journal() sessions.Delivery                  { return b.m.Journal() }
func (b filesBackend) History() sessions.RoomLog                   { return b.m.History() }
func (b filesBackend) Pairing() sessions.PairingState              { return b.m.pairingFiles() }
func (b filesBackend) Cursors() sessions.Cursors                   { return b.m.cursorFiles() }
func (b filesBackend) Limits() sessions.LimitCounters              { return b.m.limitFiles() }
func (b filesBackend) DeadLetters() sessions.DeadLetters           { return b.m.deadLetterFiles() }
func (b filesBackend) Usage() sessions.UsageLog                    { return b.m.usageFiles() }
func (b filesBackend) Memory() sessions.Memory                     { return b.m.memoryFiles() }
func (b filesBackend) Search() sessions.Searcher                   { return b.m.search }
func (b filesBackend) SetReset(c sessions.ResetConfig)             { b.m.SetReset(c) }
func (b filesBackend) ResetConfig() sessions.ResetConfig           { return b.m.ResetConfig() }
func (b filesBackend) SetMaintenance(c sessions.Maintenance) error { return b.m.SetMaintenance(c) }
func (b filesBackend) Flush(ctx context.Context) error             { return b.m.Flush(ctx) }
func (b filesBackend) Close() error                                { return b.m.Close() }

// Status probes the state dir: the journal must be writable (a passive
// Manager only reads the state dir, see probeStatus).
func (b filesBackend) Status(context.Context) sessions.BackendStatus {
	start := time.Now()
	st := sessions.BackendStatus{Kind: "files", Location: b.m.StateDir()}
	if err := b.m.probeStatus(); err != nil {
		st.Err = err.Error()
	}
	st.Latency = time.Since(start)
	return st
}

// pairingFiles is the pairing state under <stateDir>/pairing, made on
// first use and kept so its cache serves every caller.
func (m *Manager) pairingFiles() *Pairing {
	m.smu.Lock()
	defer m.smu.Unlock()
	if m.pairing == nil {
		m.pairing = NewPairing(filepath.Join(m.opts.StateDir, "pairing"), m.opts.LockTimeout)
	}
	return m.pairing
}

// cursorFiles is the cursor store under <stateDir>/cursors.
func (m *Manager) cursorFiles() *Cursors {
	m.smu.Lock()
	defer m.smu.Unlock()
	if m.cursors == nil {
		m.cursors = NewCursors(filepath.Join(m.opts.StateDir, cursorsDir), m.opts.LockTimeout)
	}
	return m.cursors
}

// cursorsDir is the cursors' directory under the state dir.
const cursorsDir = "cursors"

// memoryFiles is the agents' notes under <stateDir>/memory.
func (m *Manager) memoryFiles() *Memory {
	m.smu.Lock()
	defer m.smu.Unlock()
	if m.memory == nil {
		m.memory = NewMemory(filepath.Join(m.opts.StateDir, "memory"), m.opts.LockTimeout)
	}
	return m.memory
}

// deadLetterFiles is the dead letters' file under <stateDir>/ingress.
func (m *Manager) deadLetterFiles() *DeadLetters {
	m.smu.Lock()
	defer m.smu.Unlock()
	if m.dead == nil {
		m.dead = NewDeadLetters(filepath.Join(m.opts.StateDir, "ingress"), m.opts.LockTimeout)
	}
	return m.dead
}

// limitFiles is the budget counters' file under <stateDir>/limits.
func (m *Manager) limitFiles() *Limits {
	m.smu.Lock()
	defer m.smu.Unlock()
	if m.limits == nil {
		m.limits = NewLimits(filepath.Join(m.opts.StateDir, "limits"), m.opts.LockTimeout)
	}
	return m.limits
}

// Messages is the message tool's record under <stateDir>/history.
func (b filesBackend) Messages() sessions.RoomMessages { return b.m.roomMessageFiles() }

// roomMessageFiles makes the record on first use and keeps it.
func (m *Manager) roomMessageFiles() *RoomMessages {
	m.smu.Lock()
	defer m.smu.Unlock()
	if m.msgs == nil {
		m.msgs = NewRoomMessages(filepath.Join(m.opts.StateDir, "history"))
	}
	return m.msgs
}

// Jobs is the scheduled jobs' file under <stateDir>/jobs.
func (b filesBackend) Jobs() sessions.Jobs { return b.m.jobFiles() }

// jobFiles makes the jobs' file on first use and keeps it (its cache
// serves every caller).
func (m *Manager) jobFiles() *Jobs {
	m.smu.Lock()
	defer m.smu.Unlock()
	if m.jobs == nil {
		m.jobs = NewJobs(filepath.Join(m.opts.StateDir, "jobs"), m.opts.LockTimeout)
		m.jobs.now = m.now
	}
	return m.jobs
}

var (
	_ sessions.AgentStore = filesStore{}
	_ sessions.Backend    = filesBackend{}
)
