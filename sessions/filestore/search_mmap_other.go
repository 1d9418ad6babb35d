//go:build !unix

package filestore

import "os"

// mapFile reads path into memory (no mmap on this OS).
func mapFile(path string) ([]byte, func() error, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	return data, func() error { return nil }, nil
}
