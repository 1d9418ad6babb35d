//go:build unix

package filestore

import (
	"fmt"
	"os"
	"syscall"
)

// mapFile maps path read-only: segments are read in place, so the index
// costs page cache, not heap.
func mapFile(path string) ([]byte, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := fi.Size()
	if size == 0 || size != int64(int(size)) {
		return nil, nil, fmt.Errorf("%s: %d bytes: %w", path, size, errSegment)
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("mmap %s: %w", path, err)
	}
	return data, func() error { return syscall.Munmap(data) }, nil
}
