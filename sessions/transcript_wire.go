package sessions

// The transcript wire format (pi-coding-agent SessionManager, version 3):
// what every backend writes (transcript_encode.go) and what the seam's
// callers hand in (Header, Compaction). Reading lines back into entries is
// the engine's (sessions/transcript: ParseHeader, ParseEntry), lenient
// about what pi may write.

// transcriptVersion is the version written in new transcript headers.
const transcriptVersion = 3

// Entry types of a transcript line.
const (
	entrySession    = "session"
	entryMessage    = "message"
	entryCompaction = "compaction"
)

// timestampLayout is JavaScript's Date.toISOString, as pi writes it.
const timestampLayout = "2006-01-02T15:04:05.000Z"

// Header is what the session line records about who owns a transcript.
type Header struct {
	SessionKey string
	AgentID    string
	Cwd        string
}

// Compaction is a compaction entry to append: the summary replaces every
// entry of the chain before FirstKeptEntryID.
type Compaction struct {
	Summary          string
	FirstKeptEntryID string
	TokensBefore     int64
	TokensAfter      int64
}
