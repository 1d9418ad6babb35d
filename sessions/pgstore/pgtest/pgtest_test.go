package pgtest

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// recorder stands in for a test to see whether AdminURL fails or skips.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper()               {}
func (r *recorder) Fatal(a ...any)        { r.fatal = fmt.Sprint(a...); runtime.Goexit() }
func (r *recorder) Skip(a ...any)         { r.skip = fmt.Sprint(a...); runtime.Goexit() }
func (r *recorder) Fatalf(string, ...any) { r.fatal = "fatalf"; runtime.Goexit() }

func adminURL(r *recorder) string {
	var url string
	done := make(chan struct{})
	go func() { defer close(done); url = AdminURL(r) }()
	<-done
	return url
}

// Without a server a test never passes or skips: it fails, saying how to
// get one, under CI and elsewhere.
func TestAdminURLWithoutServer(t *testing.T) {
	t.Setenv(EnvURL, "")
	for _, ci := range []string{"true", ""} {
		t.Setenv("CI", ci)
		r := &recorder{TB: t}
		adminURL(r)
		if r.fatal == "" || r.skip != "" || !strings.Contains(r.fatal, EnvURL) || !strings.Contains(r.fatal, "scripts/test") {
			t.Errorf("CI=%q: fatal %q, skip %q; want a failure naming %s", ci, r.fatal, r.skip, EnvURL)
		}
	}
	t.Setenv(EnvURL, "postgres:///x")
	if got := adminURL(&recorder{TB: t}); got != "postgres:///x" {
		t.Errorf("AdminURL = %q with the variable set", got)
	}
}
