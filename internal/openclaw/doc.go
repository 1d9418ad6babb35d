// Package openclaw reads the state directory of the reference system
// (OpenClaw) and brings it into a gateway state through the storage seam
// (`gateway import openclaw`, SPEC §3.8), and writes a gateway state back
// in the reference system's JSON-era layout (`gateway export openclaw`).
//
// Read understands both layouts of an OpenClaw state dir, per agent:
//
//   - the SQLite layout (releases since 2026.7, agent schema ≤ 23):
//     agents/<id>/agent/openclaw-agent.sqlite holds the session rows
//     (session_nodes: one per key, its entry JSON; session_windows: one per
//     session id) and the transcripts (transcript_events, the pi JSONL
//     entries as rows, some zstd-compressed; session_transcript_active_events,
//     the active branch), and state/openclaw.sqlite the pairing allowlists
//     and the cron jobs. The databases are copied to a private temporary
//     directory (with their -wal) and read there, so the source is never
//     opened for writing: SQLite writes -shm and replays a WAL even on a
//     read-only open.
//   - the JSON-era layout (≤ 2026.7.1): agents/<id>/sessions/sessions.json
//     and <sessionId>.jsonl, read with the files backend's own readers
//     (Decoders, handed in by the caller: this package knows no backend).
//
// A transcript comes over as the lines of its active branch (abandoned
// branches of a rewind or an edit are left behind), with the session
// header rewritten to name the session's key and agent. Everything that
// has no place in the gateway is counted in the Report by field, never
// dropped in silence.
//
// The cron jobs of state/openclaw.sqlite are read as they are (Plan.Jobs);
// MapJobs, given what it needs of the gateway's configuration (routing,
// time zones, the accounts served), decides the sessions.Job each becomes
// or why it has none (cronmap.go), and Apply adds them to the backend's
// job store under ids derived from OpenClaw's, so a second run adds none.
//
// Apply writes a Plan through sessions.Importer (the same interface
// `gateway storage migrate` writes through, so every backend works) and
// sessions.PairingState; a key the target holds already is skipped, so
// running an import twice imports nothing new. The caller holds the
// target's daemon lock.
//
// Concurrency: nothing here starts a goroutine; a Plan is used by one
// goroutine.
package openclaw
