package main

import (
	"encoding/json"
	"path/filepath"

	"github.com/gateway/gateway/sessions"
)

// readIndex reads sessions.json at path as the store sees it (with its
// change log applied).
func readIndex(path string) (map[string]sessions.Entry, error) {
	return sessions.ReadIndex(filepath.Dir(path))
}

// encodeIndex renders an index the way a hand edit or an older release
// might: any JSON object of key -> entry is a valid sessions.json.
func encodeIndex(idx map[string]sessions.Entry) ([]byte, error) {
	return json.Marshal(idx)
}
