// Package lanes serialises work per session key and caps concurrency
// (SPEC §4).
//
// A Queue runs at most one batch at a time per key ("session:<key>" lane) and
// at most MaxConcurrent batches at once per class (main, subagent). Messages
// that arrive while a key is busy wait in that key's queue and are handed to
// the RunFunc according to the key's queue mode (collect, followup, steer,
// interrupt). Idle keys hold no goroutine and no memory beyond a map entry
// removed when the key drains. lanes imports no other package of this project.
package lanes
