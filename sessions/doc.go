// Package sessions is the storage contract of the gateway (SPEC §3): the
// seam every backend implements and the rules every backend shares. The
// backends are sibling packages: sessions/filestore (the files layout of
// SPEC §3.1, the embedded default) and sessions/pgstore (PostgreSQL); both
// pass the same conformance suite, sessions/sessionstest. sessions never
// imports a backend; from the project it imports routing, the pairing
// contract internal/pairstate and the search's text rules
// sessions/searchtext (words and snippets, which both backends' Searchers
// share), none of which imports another project package.
//
// The seam (seam*.go, turns.go): Backend hands out an AgentStore per agent
// (its Index of entries and its TranscriptLogs), the Delivery (ingress
// journal, reply outbox, drafts), the RoomLog, PairingState, Cursors,
// LimitCounters, RoomMessages, the UsageLog and the Searcher. Each
// interface says what is durable when; optional capabilities (Turns,
// Orphans, AcceptProbe, CursorScopes, RoomLister) are found by type
// assertion.
//
// The shared rules: entries and their keys (Entry, NewEntry, RolledOver,
// ApplyOrigin, MakeTitle, CheckSessionID, CheckID), reset policies and
// triggers (ResetConfig, Evaluate, MatchTrigger), maintenance defaults,
// the checks applied before a name reaches a file or a query
// (CheckCursor, CheckLimitKey, CheckUsageRow, CheckUsageFilter; pairing
// names and data are checked by internal/pairstate, the pairing contract),
// the problem codes of Check (Problem, Code*), the recorded moves of
// session keys (KeyMoves, read from Cursors' KeyMovesScope by the
// dispatcher and by a repair that rebuilds entries), and the transcript's
// message types (types.go: Message, Content, Usage, Compaction, Context;
// pi-coding-agent v3, SPEC §3.4).
//
// Around the contract, each in its own package: sessions/transcript, the
// engine below the seam that both backends import, writes those types as
// transcript lines (EncodeHeader, EncodeMessage, EncodeCompaction, so
// every backend stores the same bytes) and reads them back into a
// session's chain and context (the JSONL file the files backend opens
// under its own locks, the Chain the PostgreSQL backend resolves over
// rows). Exporter and Importer (seam_transfer.go) are the backends' side
// of `gateway storage migrate`; sessions/transfer, beside the seam, copies
// and verifies a state through them and the other seam interfaces.
// sessions/usagereport, above the seam, sums a UsageLog's buckets into the
// reports the CLI and the API print and refills a ledger from transcripts.
//
// Concurrency: the rules are pure functions and values. No lock is held
// across an LLM call.
package sessions
