// Package stack grows a goroutine's stack at once to the size its work
// will reach, instead of by doublings on the way.
//
// A goroutine starts with a small stack and the runtime doubles it each
// time a call needs more, copying the stack and adjusting every frame's
// pointers each time, at the moment the goroutine is deepest. A turn of
// the gateway runs on a goroutine of its own (lanes) through the runner,
// the store and the HTTP clients: in a CPU profile under load
// (cmd/gateway-bench, 500 messages a second) runtime.newstack was 3–5% of
// the daemon's CPU. Reserve, called first thing on such a goroutine, takes
// the stack a turn ends up needing in one step, while the stack is still
// nearly empty and cheap to copy.
package stack

// Turn is the stack Reserve makes room for: a turn's goroutine outgrows
// 32 KB of stack (sending a reply: the Bot API client parsing its URL),
// so a frame of 32 KB takes it to the 64 KB it needs in one copy. With
// 16 KB it still grew once more. (Daemon CPU in runtime.newstack with the
// files backend at 500 messages a second: 5.4% before, 1.3–1.9% with
// Reserve, all of it Reserve's one copy.)
const Turn = 32 << 10

// Reserve grows the calling goroutine's stack so that at least Turn bytes
// are free below the caller. It costs clearing Turn bytes of stack (about
// a microsecond) and, on a new goroutine, one copy of a nearly empty stack.
// A stack the goroutine outgrows still grows, and the garbage collector
// still shrinks one that stays mostly unused.
//
//go:noinline
func Reserve() {
	var frame [Turn]byte
	use(frame[:])
}

// use keeps frame from being optimised away.
//
//go:noinline
func use(frame []byte) {
	if len(frame) == 0 {
		panic("stack: empty frame")
	}
}
