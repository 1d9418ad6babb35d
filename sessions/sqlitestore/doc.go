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
// Durability: the database is in WAL mode. Every write goes through one
// goroutine (writer.go) that owns the one writing connection: it takes
// every write queued while the previous commit was being made and commits
// them together (group commit), each write under a savepoint of its own
// so that one write's error undoes only its statements. Two kinds of
// write, as in the files journal and pgstore:
//
//   - durable writes (an accepted record before the channel is
//     acknowledged, a transcript Append, the session index, a cursor)
//     commit with synchronous=FULL: the commit fsyncs the WAL before the
//     method returns;
//   - lazy writes (the journal's marks Start, Fail, Abort, Done, Ready,
//     Sent, Draft, DraftDone; AppendLazy; the session counters; usage
//     rows) commit with synchronous=NORMAL, apart from the durable writes
//     of their group: committed, visible, and in the WAL file in the kernel when the
//     method returns, so they survive the death of the process; the next
//     durable commit fsyncs the WAL past them (the WAL is one file, read
//     back in order after a crash, so a durable commit that returned
//     implies every lazy one before it), or the writer fsyncs it itself
//     lazySyncAfter (200 ms) after the first one. Only a crash of the
//     machine in that window loses them — the files journal writes its
//     marks to the kernel and fsyncs them shortly after, and pgstore
//     commits them with synchronous_commit off: the same boundary.
//
// A write the database refuses (a full disk, an I/O error, another
// process's lock held past the busy timeout) fails with sessions.ErrStorage;
// the journal's marks and the session counters are not lost to it: they
// are held in memory, in order, and written once the database takes
// writes again (delivery_backlog.go, counters_held.go), and the journal's
// health turns nil by itself then (a probe write), as the files journal
// and pgstore recover.
//
// Statements are prepared once and kept: the writer's on its connection
// (writer_stmts.go), the readers' on the reading pool (reader.go). Reads
// use a pool of read-only connections, which WAL lets run beside the
// writer; they see every write whose method has returned.
//
// Processes: one daemon per database file. Open does not lock (a second
// handle on the file, as the CLI or a conformance case opens it, is
// served: SQLite's own locks serialise writers, each waiting up to the
// busy timeout); the daemon holds its state dir's lock (gatewayd.LockStateDir), and
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
