package sessionstest

import (
	"testing"

	"github.com/gateway/gateway/sessions"
)

// BackendOpener returns a fresh, empty backend; it is closed when the test
// ends.
type BackendOpener func(t *testing.T) sessions.Backend
