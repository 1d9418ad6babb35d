package channels

import "fmt"

// Inherit is what a new thread's or topic's session takes from its
// parent's session (Discord thread.inheritParent).
type Inherit string

// Inherit modes. In YAML, false is InheritNone and true InheritDigest, as
// before the modes had names.
const (
	// InheritNone: the thread starts empty.
	InheritNone Inherit = ""
	// InheritDigest: the thread's first turn carries the parent's last 20
	// messages (text only), framed as context.
	InheritDigest Inherit = "digest"
	// InheritFork: the thread's transcript starts with a copy of the
	// parent's active context (what the parent's model is sent: the last
	// compaction's summary and the messages after it, tool calls
	// included), branching from the parent's head as it was when the
	// thread began (seed 002). The two go their own ways after.
	InheritFork Inherit = "fork"
)

// Validate refuses a mode other than the three.
func (m Inherit) Validate() error {
	switch m {
	case InheritNone, InheritDigest, InheritFork:
		return nil
	}
	return fmt.Errorf("%q: want true, false, digest or fork", string(m))
}

// InheritFromBool is the mode a YAML boolean names.
func InheritFromBool(b bool) Inherit {
	if b {
		return InheritDigest
	}
	return InheritNone
}
