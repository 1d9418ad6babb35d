package transcript

import (
	"io"
	"os"
)

// Committer makes a durable append durable without the transcript file's
// own fsync: the files backend's ingress journal holds the appended bytes
// (a redo record) and fsyncs them in one group with every other session's
// appends and the journal's own lines.
type Committer interface {
	// Commit is called under the transcript's write lock once the bytes
	// b were written to the file at path at offset at; r reads the file
	// and fi describes it after the write.
	// ok false: the caller fsyncs the file itself (then calls Synced).
	// Otherwise wait returns once the bytes, and every byte of the file
	// before them, are durable (in the file or in the journal).
	Commit(path string, fi os.FileInfo, r io.ReaderAt, at int64, b []byte) (wait func() error, ok bool)
	// Synced reports that an fsync of the file at path made its first
	// end bytes durable.
	Synced(path string, end int64)
}

// WithCommitter routes durable appends through c instead of an fsync of
// the file (the daemon's files backend).
func WithCommitter(c Committer) Option {
	return func(t *File) { t.commit = c }
}
