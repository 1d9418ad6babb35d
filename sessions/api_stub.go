package sessions

// This file fixes the exported API the rest of the daemon codes against.
// The implementation replaces the bodies (and may split this file); callers
// rely on these names and meanings.

import "errors"

var errTODO = errors.New("sessions: not implemented yet")
