// Package sqlitestore is the SQLite backend of the session layer (SPEC
// §3.8, issue 28): one database file per state directory
// (StateDir/gateway.sqlite) holding what the files backend keeps in many
// files and pgstore in PostgreSQL — the session index, transcripts, the
// ingress journal and reply outbox, channel cursors — with the files
// backend's semantics (it imports sessions for the entry and reset rules
// and sessions/transcript for the transcript encoding and chain, as
// pgstore does). It passes the seam's conformance suites
// (sessions/sessionstest).
//
// Driver: modernc.org/sqlite, SQLite translated to Go. It needs no cgo, so
// CGO_ENABLED=0 builds, cross-compiles and the distroless image keep
// working; a cgo driver (mattn/go-sqlite3) would be faster per statement
// but would need a C toolchain in every build and a libc in the image.
//
// Durability: the database is in WAL mode with synchronous=FULL, so every
// commit fsyncs the WAL before it returns. Every write goes through one
// goroutine (writer.go) that owns the one writing connection: it takes
// every write queued while the previous commit was being made durable and
// commits them together, one fsync for the group (group commit), each
// write under a savepoint of its own so that one write's error undoes
// only its statements. A write is durable when its method returns: an
// accepted record before the channel is acknowledged, a reply before it is
// sent, a transcript append, a cursor. Reads use a pool of read-only
// connections, which WAL lets run beside the writer; they see every write
// whose method has returned.
//
// Processes: one daemon per database file. Open does not lock (a second
// handle on the file, as the CLI or a conformance case opens it, is
// served: SQLite's own locks serialise writers, each waiting up to the
// busy timeout); the daemon holds LockDaemon, a flock beside the file, and
// a second daemon on the same file is refused with an error naming the
// holder. There are no replicas, so the backend implements neither
// sessions.Turns nor sessions.Orphans (no session leases: the lanes of the
// one process serialise a session's turns, as with the files backend).
//
// Schema: versioned SQL migrations embedded in the binary (migrations/),
// applied by Open, each in a transaction of its own.
//
// Concurrency: a DB and everything it hands out are safe for concurrent
// use. The writer goroutine is owned by the DB: Close commits the writes
// already queued, stops it and waits for it.
package sqlitestore
