package filestore

import (
	"os"
	"sort"
	"sync"
	"syscall"
)

// usageMarkEvery is the distance in bytes between two marks of a month
// file.
const usageMarkEvery = 1 << 20

// usageNoTime stands for the time of a line whose time is not where
// encodeUsageLine puts it (a damaged or overlong line): later than any, so
// no scan starts past it.
const usageNoTime = "\xff"

// usageMarks are the places in one month file where a scan may start:
// each the offset of a line start and the latest time of the lines before
// it. A query since a time starts at the last mark whose lines before are
// all older: /usage's "today" read a day of rows, not the whole month
// file, a month of a busy bot's turns (TestUsageQuerySinceReadsOnlyFromThere).
// The marks are found by the scans themselves (the first scan of a file
// in a process reads it whole) and hold however rows were appended (a
// rebuild's old rows only raise no mark); a file replaced or cut shorter
// drops them.
type usageMarks struct {
	mu    sync.Mutex
	ino   uint64
	size  int64       // the file's size when last looked at
	marks []usageMark // by offset; maxAt never decreases
}

type usageMark struct {
	off   int64
	maxAt string
}

// marksOf returns path's marks, dropped first when the file (fi) is no
// longer the one they were found in.
func (u *UsageLog) marksOf(path string, fi os.FileInfo) *usageMarks {
	var ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = st.Ino
	}
	u.mu.Lock()
	m, ok := u.marks[path]
	if !ok {
		m = &usageMarks{}
		u.marks[path] = m
	}
	u.mu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ino != ino || fi.Size() < m.size {
		m.ino, m.marks = ino, nil
	}
	m.size = fi.Size()
	return m
}

// from is the mark a scan of the lines at or after lo starts at (the
// file's start when lo is "" or no mark has only older lines before it).
func (m *usageMarks) from(lo string) usageMark {
	if lo == "" {
		return usageMark{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	i := sort.Search(len(m.marks), func(i int) bool { return m.marks[i].maxAt >= lo })
	if i == 0 {
		return usageMark{}
	}
	return m.marks[i-1]
}

// passed records that the lines before off (a line start) are at most
// maxAt, as a new mark when off is a mark's distance past the last.
func (m *usageMarks) passed(off int64, maxAt string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	last := int64(0)
	if n := len(m.marks); n > 0 {
		last = m.marks[n-1].off
	}
	if off >= last+usageMarkEvery {
		m.marks = append(m.marks, usageMark{off, maxAt})
	}
}
