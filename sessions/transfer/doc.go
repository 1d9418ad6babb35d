// Package transfer moves a stored state from one storage backend to
// another and checks the result (`gateway storage migrate`, SPEC §3.8). It
// works only through the seam of package sessions: Copy and Compare over
// the Exporter and Importer both backends implement (session keys, their
// archived sessions and transcripts), and a Copy/Compare pair for each
// other part of a state over the seam's own interfaces — CopyDelivery
// (Delivery: pending records, unsent replies, drafts), CopyPairing
// (PairingState), CopyCursors (Cursors listing their scopes), CopyRooms
// (RoomLog listing its rooms) and CopyUsage (UsageLog). It knows no
// backend: the CLI opens both and hands them in.
//
// Every copy is idempotent: what the target holds with the same content is
// skipped, and what it holds with other content is a conflict unless the
// caller asks to overwrite it. Clocks are written and compared at UTC
// microseconds, the resolution PostgreSQL keeps (sessions.KeyState.AtMicros).
//
// Concurrency: Copy and Compare read and write several keys at once
// (Options.Workers, Compare's workers) and wait for every goroutine they
// start before returning; the other functions work sequentially. The caller holds both backends'
// daemon locks: no daemon may write either state meanwhile.
package transfer
