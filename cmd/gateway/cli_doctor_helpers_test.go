package main

import (
	"encoding/json"
	"path/filepath"

	"github.com/gateway/gateway/sessions"
	"github.com/gateway/gateway/sessions/filestore"
)

// readIndex reads sessions.json at path as the store sees it (with its
// change log applied).
func readIndex(path string) (map[string]sessions.Entry, error) {
	return filestore.ReadIndex(filepath.Dir(path))
}

// encodeIndex renders an index the way a hand edit or an older release
// might: any JSON object of key -> entry is a valid sessions.json.
func encodeIndex(idx map[string]sessions.Entry) ([]byte, error) {
	return json.Marshal(idx)
}
