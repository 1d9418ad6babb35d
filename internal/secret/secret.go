// Package secret reads secrets (bot tokens, API keys, the HTTP token)
// from files, the one copy of that routine in the project: surrounding
// whitespace (a trailing newline from `echo`) is dropped, and an empty or
// implausibly large file is an error that names the file, never an empty
// secret that silently disables authentication. It imports no other
// project package, so any package may use it (internal/archtest).
package secret

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// MaxSize is the largest secret file accepted.
const MaxSize = 64 << 10

// ReadFile returns the trimmed content of the secret file at path.
func ReadFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > MaxSize {
		return "", fmt.Errorf("%s is larger than %d KiB: not a secret file", path, MaxSize>>10)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	if strings.ContainsAny(s, "\r\n") {
		return "", errors.New(path + " holds more than one line")
	}
	return s, nil
}
