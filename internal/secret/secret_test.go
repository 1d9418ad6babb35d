package secret

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if s, err := ReadFile(write("ok", "  tok-123\n")); err != nil || s != "tok-123" {
		t.Fatalf("ReadFile = %q, %v", s, err)
	}
	for name, tc := range map[string]struct{ content, want string }{
		"blank":     {" \n\t\n", "is empty"},
		"two lines": {"a\nb\n", "more than one line"},
		"huge":      {strings.Repeat("x", MaxSize+1), "not a secret file"},
	} {
		p := write(strings.ReplaceAll(name, " ", "-"), tc.content)
		if _, err := ReadFile(p); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: err = %v, want %q naming the file", name, err, tc.want)
		}
	}
	if _, err := ReadFile(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}
}
