package gatewayd

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/gateway/gateway/channels"
	"github.com/gateway/gateway/configs"
)

// choiceKeyFile is the choice buttons' HMAC key under the state dir.
const choiceKeyFile = "choices.key"

// choiceKeys builds the signer of the message tool's choice buttons
// (channels/choices.go) over <stateDir>/choices.key, created (0600) when
// missing. Replicas that share a PostgreSQL backend must share the file
// too (copy it into each state dir), else a press handled by another
// replica than the one that asked is refused as invalid. now is the
// buttons' clock (nil: time.Now).
func choiceKeys(cfg *configs.Config, now func() time.Time) (*channels.ChoiceKeys, error) {
	key, err := stateKey("choice key", filepath.Join(cfg.StateDir, choiceKeyFile))
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	k, err := channels.NewChoiceKeys(key, 0, now)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	return k, nil
}
