package gatewayd

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gateway/gateway/channels/web"
	"github.com/gateway/gateway/configs"
)

// senderKeySize is the size of the web sender cookie's HMAC key.
const senderKeySize = 32

// webIdentity builds the web chat's sender identity
// (channels.web.senderIdentity); the cookie mode's key is read from
// <stateDir>/web/sender.key, created (0600, its directory 0700) when
// missing.
func webIdentity(cfg *configs.Config) (*web.Identity, error) {
	var key []byte
	if cfg.Channels.Web.SenderIdentity == web.IdentityCookie {
		var err error
		if key, err = stateKey("sender key", filepath.Join(cfg.StateDir, "web", "sender.key")); err != nil {
			return nil, fmt.Errorf("gateway: channels.web.senderIdentity: %w", err)
		}
	}
	return web.NewIdentity(cfg.Channels.Web.SenderIdentity, cfg.HTTP.Token, key)
}

// stateKey reads the key (what, for errors) at path, or creates it with
// fresh random bytes. A key of another size is an error (never silently
// replaced: every browser's cookie, or every open question's buttons,
// would turn invalid).
func stateKey(what, path string) ([]byte, error) {
	key, err := os.ReadFile(path)
	switch {
	case err == nil && len(key) == senderKeySize:
		return key, nil
	case err == nil:
		return nil, fmt.Errorf("%s %s: %d bytes, want %d (remove it to make a new one)", what, path, len(key), senderKeySize)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	key = make([]byte, senderKeySize)
	_, _ = rand.Read(key) // crypto/rand.Read never fails (Go 1.24+)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return stateKey(what, path) // made meanwhile by another process: use it
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if _, err := f.Write(key); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("%s: write %s: %w", what, path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("%s: sync %s: %w", what, path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("%s: close %s: %w", what, path, err)
	}
	return key, nil
}
