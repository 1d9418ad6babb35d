package pgstore

import (
	"context"
	"sync"
)

// startGroupCommit starts the DB's own Appender, which every TranscriptLog
// appends through so that concurrent appends of all sessions share commits.
// The DB owns its goroutines: Close stops them once the appends handed over
// are committed.
func (db *DB) startGroupCommit() {
	db.group = db.NewAppender(0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = db.group.Run(ctx) // Run returns nil: it stops only when ctx ends
	}()
	var once sync.Once
	db.stopGroup = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
}
