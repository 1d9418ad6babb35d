// Package transcript is the transcript engine the storage backends share
// (SPEC §3.4): the in-memory machinery that turns entries of the
// transcript wire format (pi-coding-agent JSONL v3) into a session's chain,
// its context, its history and its recovery state. It writes the lines
// every backend stores (encode.go: EncodeHeader, EncodeMessage,
// EncodeCompaction, so both backends store the same bytes) and reads them
// back (wire.go: ParseHeader, ParseEntry into a Node), which only the
// backends need. It sits below the seam, beside the backends:
// it imports sessions and no backend, and nothing above the seam imports
// it (a transcript there is a sessions.TranscriptLog a backend hands out).
//
//   - File (file.go, append.go) is one append-only JSONL transcript on
//     disk, the files backend's TranscriptLog: it keeps the parsed tail
//     and the rebuilt context in memory, extends them on Append, and reads
//     a file from its end back to the latest compaction (load.go, state.go)
//     so a long compacted session costs only its kept tail. A writable
//     File keeps its file open between operations, checking with one stat
//     of the path that it is still the file there (keep.go), and hands its
//     cached context out without copying it. LoadFile and ReadHistory read
//     one without locking or writing (doctor, tests).
//   - Chain (chain.go) is the same logic without I/O, over entries the
//     caller adds one by one: the PostgreSQL backend resolves its rows
//     with it, so both backends answer Context, History and Records alike.
//   - The context rebuild (context.go: summary first, tool calls paired
//     with their results, consecutive user messages merged) and Records
//     (records.go, recovery's view of journal records) serve both.
//
// Concurrency: a File is safe for concurrent use; its appends are
// serialised by the Locker it is given (a file lock in the files backend),
// held only while bytes are written, never across fsync or an LLM call;
// concurrent appends share one fsync. A Chain is not safe for concurrent
// use: its owner locks it.
package transcript
