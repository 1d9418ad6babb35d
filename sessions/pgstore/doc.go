// Package pgstore is the PostgreSQL backend of the session layer (SPEC §3.8,
// issue 12): the session index (entries keyed by agent and session key, with
// their archive), append-only transcripts with a per-session sequence,
// channel cursors such as the Telegram offset (Cursors), pairing state
// (Pairing), the ingress journal, reply outbox and drafts (Delivery), and
// the room history of group rooms (RoomLog); Backend composes them into a
// sessions.Backend. It owns its schema: versioned SQL migrations embedded
// in the binary and applied by Open under a PostgreSQL advisory lock, so
// several replicas starting at once migrate exactly once.
//
// pgstore implements the semantics of the files backend in package sessions
// (it imports sessions for Entry, Origin, Counters, the reset rules and
// the entry rules NewEntry, RolledOver and ApplyOrigin); sessions never
// imports pgstore. Store adapts an agent's Index to sessions.Index, the
// seam the daemon's consumers use, and passes the seam's conformance suite
// (sessions/sessionstest). Keys and ids reach PostgreSQL only as
// query parameters, never as SQL text.
//
// Store is also a sessions.AgentStore: its TranscriptLog keeps the files
// backend's transcripts (SPEC §3.4) as rows, one per JSONL line, the body
// holding the line's bytes, and rebuilds contexts with the same code
// (sessions/transcript's Chain), reading from the latest compaction. Its
// appends go through the DB's group commit (writegroup.go), which Open
// starts and Close stops.
//
// Durability: what SPEC §3.7 needs durable (an accepted record before the
// channel is acknowledged, a turn's reply before it is sent, creating,
// resetting and deleting a session) waits for its WAL flush. Routine
// writes (counters, a fresh session's lastInteractionAt and origin, a
// turn's inputs, the delivery marks) commit with synchronous_commit off:
// committed, visible to every replica and surviving the death of this
// process when they return, flushed within wal_writer_delay or by the next
// synchronous commit; only a crash of the server loses the last few
// hundred milliseconds of them, as a crash of the machine loses what the
// files backend had not fsynced yet (lazy.go). A batch of accepted records
// shares one flush (Delivery.AcceptDeferred), and one insert write when the
// dispatcher gathers it (Delivery.AcceptDeferredAll: a Telegram getUpdates
// batch in one round trip and its flush in one more; a batch of one record
// in one round trip with its flush), and Context decodes only
// what was appended since it last ran (transcript_cache.go).
//
// Round trips (issue 21): the short writes of every caller (accepts,
// marks, a session's touch, appends, usage rows, counters, session leases)
// go through one group commit (writegroup.go), which sends the writes
// handed to it meanwhile as one transaction in one pipelined batch, and
// whose riders (a turn's start mark and usage row) cost no round trip of
// their own; a session's queued counters are written by its next Begin,
// the inputs of a turn are appended with Begin's touch of the session and
// the context read back in the same write (sessions.InputsAhead,
// begin_inputs.go; AppendLazyContext when Begin cannot take them: a
// session created or rolled over), and the reply's outbox row goes with
// the reply's append (sessions.ReplyAhead, reply_ahead.go). A message to
// an existing session then waits for five round trips (its accept and the
// accept's flush; its turn's start, Begin, inputs and context; the reply's
// append with its outbox row; the last chunk's mark) instead of about
// thirteen, and shares most of them with other messages' writes. A DB
// counts its round trips and commits by operation (OpStats,
// roundtrips.go): the daemon's metrics gateway_storage_roundtrips_total
// and gateway_storage_commits_total, which cmd/gateway-bench -postgres
// reports per message; deploy/OPERATIONS.md has the figures.
//
// Concurrency: a DB and the Index values it hands out are safe for
// concurrent use by many goroutines and by many processes sharing one
// database. Every operation is one statement or one short transaction; no
// transaction is held across a call into the caller (Patch runs its
// function inside the transaction, so that function must be quick and must
// not call the DB). Concurrent writers of one entry are serialised by
// PostgreSQL row locks, so no update is lost; concurrent appends to one
// transcript are serialised by the row of transcript_heads that hands out
// sequence numbers, so none is lost and seq order is commit order. A
// Delivery runs one goroutine (retrying marks after a failed write,
// renewing its lease, one owner row whatever it holds, forgetting old
// completed ids and dead handles' owner rows) until Close; a
// RoomLog runs none, and its writes to one room queue on that room's
// advisory lock.
//
// Several replicas share one database (issue 13): Leases hands out named
// leases with fencing tokens on the database's clock (lease.go; CheckFence
// refuses, inside a write's transaction, a token that moved on), RunLeader
// runs a singleton while its replica holds a leader lease (leader.go: one
// goroutine per call, renewing every ttl/3, giving the role up before the
// lease can expire, woken by LISTEN/NOTIFY when a leader releases), and a
// non-passive Backend registers its replica with a heartbeat goroutine
// until Close (replica.go). ReplicaStatus reads, in one statement, the
// leases a replica holds and the ingress nobody works on (a dead owner's
// or an expired owner lease's pending records) for its metrics and gateway
// doctor (replica_status.go).
//
// Check and Repair are gateway doctor's knowledge of this backend (issue
// 12): Check compares, in one read-only snapshot and with set-based
// statements, the entries with their transcript rows, the heads and the
// archive, and reports the delivery backlog and the schema version, as
// sessions.Problem values with the files backend's codes where the
// meaning is the same (check.go); Repair holds the daemon lock
// exclusively, so it refuses while a daemon runs, and never changes or
// deletes a transcript row (repair.go).
//
// Tests and benchmarks run against a real server, each test on a database
// of its own (package pgtest): ./scripts/test starts one, or
//
//	export GATEWAY_TEST_POSTGRES_URL=$(./scripts/postgres)
//	go test -race ./sessions/pgstore/...
//	go test -run '^$' -bench . ./sessions/pgstore
package pgstore
