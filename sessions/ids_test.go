package sessions

import (
	"strings"
	"testing"

	"github.com/google/uuid"
)

// uuidCanonical is the check CheckSessionID made before it stopped parsing
// and rendering (issue 21): uuid.Parse, then the rendering must be the id.
func uuidCanonical(id string) bool {
	u, err := uuid.Parse(id)
	return err == nil && u.String() == id
}

// TestCheckSessionIDIsCanonicalUUID: CheckSessionID accepts exactly what
// uuid.Parse accepts and renders back unchanged (every form uuid.Parse
// reads, hostile input, fresh ids), and allocates nothing for a good id.
func TestCheckSessionIDIsCanonicalUUID(t *testing.T) {
	good := "0b7c3a9e-1f2d-4c5b-8a6e-9d0f1e2a3b4c"
	ids := []string{good, "", "x", strings.ToUpper(good), "{" + good + "}", "urn:uuid:" + good,
		strings.ReplaceAll(good, "-", ""), good[:35], good + "0", good[:8] + "_" + good[9:], good[:35] + "g",
		"../../etc/passwd-0000-0000-0000-00000", "00000000-0000-0000-0000-000000000000", good[:9] + "-" + good[10:],
		"0b7c3a9e-1f2d-4c5b-8a6e-9d0f1e2a3b4\x00", "0b7c3a9e-1f2d-4c5b-8a6e-9d0f1e2a3bé"}
	for range 200 {
		ids = append(ids, uuid.NewString())
	}
	for _, id := range ids {
		if got, want := CheckSessionID(id) == nil, uuidCanonical(id); got != want {
			t.Errorf("CheckSessionID(%q) accepts: %v, want %v", id, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = CheckSessionID(good) }); n != 0 {
		t.Errorf("a good id: %v allocations, want 0", n)
	}
}

// FuzzCheckSessionID: CheckSessionID agrees with uuid.Parse's canonical
// form on any input.
func FuzzCheckSessionID(f *testing.F) {
	f.Add("0b7c3a9e-1f2d-4c5b-8a6e-9d0f1e2a3b4c")
	f.Add("0B7C3A9E-1F2D-4C5B-8A6E-9D0F1E2A3B4C")
	f.Fuzz(func(t *testing.T, id string) {
		if got, want := CheckSessionID(id) == nil, uuidCanonical(id); got != want {
			t.Errorf("CheckSessionID(%q) accepts: %v, want %v", id, got, want)
		}
	})
}
