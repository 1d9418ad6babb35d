// Package filestore is the files backend of the session layer (SPEC §3.1,
// §3.8), the embedded default, beside sessions/pgstore: the per-agent
// sessions.json index (Store, handed out by a Manager that Open starts on a
// state dir), the ingress journal, reply outbox and drafts (Journal), the
// room history of group messages not addressed to the bot (RoomHistory),
// channel cursors in <stateDir>/cursors/<escaped scope>.json (Cursors),
// pairing state in <stateDir>/pairing/<channel>.json (Pairing, the format
// declared in internal/pairstate so that access reaches it without reaching
// sessions), rate-limit counters (Limits), remembered room messages
// (RoomMessages), the usage ledger in <stateDir>/usage/<agentId>/<YYYY-MM>.jsonl
// (UsageLog) and the transcript search index under <stateDir>/search
// (search_index.go has its design and concurrency rules; SearchFiles lists its files).
// Manager.Backend composes them into a sessions.Backend. A Store holds its
// index in memory as compact entries (entry_compact.go) and reads
// sessions.json without encoding/json when the file is as it writes it
// (index_read.go): a start with 100,000 sessions answers in a fraction of a
// second, within about 100 MB.
//
// filestore implements the contract package sessions owns and uses its
// shared rules: entries are built with sessions.NewEntry, RolledOver and
// ApplyOrigin, resets evaluated by sessions.Evaluate, transcripts written
// and read by the transcript engine the backends share
// (sessions/transcript: transcript.File, SPEC §3.4) under this package's
// file locks; sessions never imports filestore. It passes
// the seam's conformance suite (sessions/sessionstest), like pgstore.
//
// Concurrency: a Manager and the Stores, transcript Files and Journal it hands
// out are safe for concurrent use by many goroutines and, through
// flock-based file locks (lock.go, SPEC §3.5), by several processes on one
// state directory. Files are replaced through internal/atomicfile. No lock
// is held across an LLM call: callers append to a transcript only when a
// message is complete.
//
// The package also knows how its files go wrong: Check finds problems
// (sessions.Problem, each with a stable code) without changing anything,
// and Repair fixes the fixable ones under the same locks the daemon takes;
// `gateway doctor` only prints them. Transfer reads and writes a state dir
// for `gateway storage migrate` (sessions/transfer: Copy, Compare).
package filestore
