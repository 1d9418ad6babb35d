package filestore

import (
	"net/url"
	"regexp"
	"testing"
)

// FuzzEscapeScope: every scope becomes one file name of safe bytes that
// decodes back to the scope (so two scopes never share a file).
func FuzzEscapeScope(f *testing.F) {
	for _, s := range []string{"telegram:bot1", "..", ".", "../x", "a/b", "%2E", "Bot", "日本語", "\x00", ""} {
		f.Add(s)
	}
	safe := regexp.MustCompile(`^[a-z0-9_%A-F-]*$`)
	f.Fuzz(func(t *testing.T, scope string) {
		name := escapeScope(scope)
		if !safe.MatchString(name) || name == "." || name == ".." {
			t.Fatalf("escapeScope(%q) = %q: not a safe file name", scope, name)
		}
		back, err := url.PathUnescape(name)
		if err != nil || back != scope {
			t.Fatalf("escapeScope(%q) = %q decodes to %q, %v", scope, name, back, err)
		}
	})
}
