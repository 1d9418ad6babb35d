package filestore

import (
	"errors"
	"fmt"
)

// The lock files of a lockSet stay open between holds: opening (and
// creating) <file>.lock on every Begin and closing it on release was most
// of what taking a lock cost. flock(2) locks belong to the open file
// description, so locking and unlocking a kept descriptor is the same
// cross-process lock. The cache is bounded: an LRU of maxOpenLockFiles
// descriptors (plus, for a moment, those of locks held when others pushed
// them out: a held lock's file is never closed under its holder);
// Manager.Close closes it.
//
// Lock files are removed (removeLockFile, under the lock) when their
// session is archived or swept. A descriptor kept, or opened by a waiter,
// before the removal then names an unlinked inode a newcomer opening the
// path does not see: after taking the flock, tryLock checks that its file
// still has a name (fstat's link count) and otherwise reopens the path.
// Lock files are never renamed, so a linked file is the path's file.

// maxOpenLockFiles bounds the lock files a lockSet keeps open.
const maxOpenLockFiles = 256

// tryLock takes the flock without waiting; the caller holds l.sem.
func (l *fileLock) tryLock() (bool, error) {
	for {
		fd, err := l.lockFD()
		if err != nil {
			return false, err
		}
		ok, err := tryFlock(fd)
		if err != nil || !ok {
			if err != nil {
				l.discardFD()
			}
			return false, err
		}
		gone, err := unlinked(fd)
		if err == nil && !gone {
			return true, nil
		}
		err = errors.Join(err, unflock(fd))
		l.discardFD()
		if err != nil {
			return false, fmt.Errorf("check lock file: %w", err)
		}
		// The file was removed while open here: lock the path's file instead.
	}
}

// unlock drops the flock; the caller holds l.sem. A lock file no longer in
// the cache (evicted from its list while held, forgotten, or the set
// closed) is closed now.
func (l *fileLock) unlock() error {
	if l.fh == nil {
		return nil
	}
	err := unflock(l.fd)
	l.set.mu.Lock()
	keep := l.elem != nil
	if keep && l.set.open.Len() > l.set.maxOpen {
		l.set.evictLocked() // pushed over the bound while held
	}
	l.set.mu.Unlock()
	if err != nil || !keep {
		l.discardFD()
	}
	return err
}

// lockFD returns l's open lock file descriptor, opening the file when it
// is not cached; the caller holds l.sem.
func (l *fileLock) lockFD() (int, error) {
	ls := l.set
	if l.fh != nil {
		ls.mu.Lock()
		if l.elem != nil {
			ls.open.MoveToFront(l.elem)
		}
		ls.mu.Unlock()
		return l.fd, nil
	}
	f, fd, err := openLockFile(l.path)
	if err != nil {
		return -1, err
	}
	l.fh, l.fd = f, fd
	ls.mu.Lock()
	if !l.dropped && !ls.closed {
		l.elem = ls.open.PushFront(l)
		ls.evictLocked()
	}
	ls.mu.Unlock()
	return fd, nil
}

// discardFD closes l's lock file and drops it from the cache; the caller
// holds l.sem.
func (l *fileLock) discardFD() {
	l.set.mu.Lock()
	if l.elem != nil {
		l.set.open.Remove(l.elem)
		l.elem = nil
	}
	l.set.mu.Unlock()
	l.closeFD()
}

// closeFD closes l.fh; the caller holds l.sem and has taken l off the list.
func (l *fileLock) closeFD() {
	if l.fh != nil {
		_ = l.fh.Close()
		l.fh, l.fd = nil, -1
	}
}

// evictLocked closes the least recently used lock files beyond maxOpen
// whose lock nobody holds or is taking. Called with ls.mu held; it takes
// no lock's semaphore but without waiting.
func (ls *lockSet) evictLocked() {
	for e := ls.open.Back(); e != nil && ls.open.Len() > ls.maxOpen; {
		prev := e.Prev()
		c := e.Value.(*fileLock)
		select {
		case c.sem <- struct{}{}:
			ls.open.Remove(e)
			c.elem = nil
			c.closeFD()
			ls.trimLocked(c)
			<-c.sem
		default: // in use: its holder's unlock keeps it cached
		}
		e = prev
	}
}

// trimLocked drops c from ls.locks and marks it dropped (uncached, its
// file closed on release). evictLocked calls it for a lock nobody holds
// whose file it just closed, so the set stays as small as its cache rather
// than as large as every session this process touched; forget, for a lock
// its caller holds and is about to remove. A goroutine that got c from get
// before may still take it: flock(2) excludes it from the path's next
// fileLock as from another process's (the waiter polls). Called with ls.mu
// held.
func (ls *lockSet) trimLocked(c *fileLock) {
	if ls.locks[c.path] == c {
		delete(ls.locks, c.path)
		c.dropped = true
	}
}

// forget drops path from the set; the caller holds the lock and is about to
// remove its file together with its session. The file is closed on release.
func (ls *lockSet) forget(path string) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l, ok := ls.locks[path]
	if !ok {
		return
	}
	ls.trimLocked(l)
	if l.elem != nil {
		ls.open.Remove(l.elem)
		l.elem = nil
	}
	select {
	case l.sem <- struct{}{}: // not held after all: close it now
		l.closeFD()
		<-l.sem
	default:
	}
}

// close closes the cached lock files; the files of locks held now are
// closed when released. Locks taken later are not cached.
func (ls *lockSet) close() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.closed = true
	for e := ls.open.Front(); e != nil; e = e.Next() {
		c := e.Value.(*fileLock)
		c.elem = nil
		select {
		case c.sem <- struct{}{}:
			c.closeFD()
			<-c.sem
		default:
		}
	}
	ls.open.Init()
}
