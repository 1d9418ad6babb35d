// Package sessions keeps conversations durable: the per-agent sessions.json
// index, the append-only JSONL transcripts (pi-coding-agent format v3),
// reset policies, file locks, the durable ingress journal (SPEC §3) and the
// room history of group messages not addressed to the bot (RoomHistory).
//
// Concurrency: a Manager and the Stores, Transcripts and Journal it hands out
// are safe for concurrent use by many goroutines and, through flock-based
// file locks, by several processes on one state directory. No lock is held
// across an LLM call: callers append to a transcript only when a message is
// complete. sessions imports only routing.
//
// Index is the seam of the session index (SPEC §3.8): Store is its files
// backend, sessions/pgstore its PostgreSQL one, and both build entries with
// the same rules (NewEntry, RolledOver, ApplyOrigin) and pass the same
// conformance suite (sessions/sessionstest).
//
// Pairing state and channel cursors are behind the seam too
// (Backend.Pairing, Backend.Cursors). The files backend keeps pairing in
// <stateDir>/pairing/<channel>.json (PairingFiles, the format package
// access wrote before, declared in internal/pairstate so that access
// reaches it without reaching sessions) and cursors in
// <stateDir>/cursors/<escaped scope>.json (CursorFiles). Channel names,
// scopes, names and values are checked (CheckPairingChannel, CheckCursor)
// before they reach a file name or a query.
//
// The usage ledger (Backend.Usage, seam_usage.go) holds one row per agent
// turn with its tokens and cost; the files backend keeps it in
// <stateDir>/usage/<agentId>/<YYYY-MM>.jsonl (UsageFiles), RebuildUsage
// refills it from transcripts and CopyUsage moves it between backends.
// Transcript search is behind the seam too (Backend.Search, seam_search.go):
// the files backend keeps an inverted index under <stateDir>/search,
// updated by every transcript append, persisted as checksummed segment
// files and rebuilt from the transcripts when missing or damaged
// (search_index.go has its design and concurrency rules).
//
// The package also knows how its durable state goes wrong: Check finds
// problems (each with a stable code) without changing anything, and Repair
// fixes the fixable ones under the same locks the daemon takes; `gateway
// doctor` only prints them.
package sessions
