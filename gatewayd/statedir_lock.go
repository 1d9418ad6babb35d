package gatewayd

// LockStateDir takes the daemon's lock on stateDir (the flock on
// <stateDir>/gateway.pid a running daemon holds) for a tool that must not
// run beside a daemon, such as `gateway storage migrate`: it fails, naming
// the daemon's pid, while one runs, and a daemon started meanwhile refuses
// to start. release must be called.
func LockStateDir(stateDir string) (release func(), err error) { return lockStateDir(stateDir) }
