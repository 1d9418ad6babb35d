package sessions

import "time"

// HistoryEntry is one unaddressed room message kept for the next turn.
type HistoryEntry struct {
	// Seq orders entries across every room; a turn records the highest
	// Seq it took so the history can be cut after it.
	Seq        uint64
	MessageID  string
	SenderID   string
	SenderName string
	At         time.Time
	Text       string
}

// HistoryLimits bound one room's kept messages: at most Count entries and
// MaxBytes of text, oldest evicted first. Count 0 keeps nothing.
type HistoryLimits struct {
	Count    int
	MaxBytes int
}

// HistoryStats counts the room history's work since it was opened.
type HistoryStats struct {
	Rooms, Entries  int
	Appends, Fsyncs int64
	FileBytes       int64
	LiveBytes       int64
}
