package archtest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeQuickStart: the README's quick start has exactly two commands,
// the second runs the tests through scripts/test (which installs what the
// browser test needs), and CI runs that same command.
func TestReadmeQuickStart(t *testing.T) {
	root := filepath.Join("..", "..")
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)## Quick start\n\n```sh\n(.*?)```").FindSubmatch(b)
	if m == nil {
		t.Fatal("README has no quick start block")
	}
	var cmds []string
	for _, l := range strings.Split(strings.TrimSpace(string(m[1])), "\n") {
		cmd, _, _ := strings.Cut(l, "#")
		cmds = append(cmds, strings.TrimSpace(cmd))
	}
	if len(cmds) != 2 || !strings.HasPrefix(cmds[0], "go run ./cmd/gateway") || cmds[1] != "./scripts/test" {
		t.Fatalf("quick start commands %q, want the gateway run and ./scripts/test", cmds)
	}
	fi, err := os.Stat(filepath.Join(root, "scripts", "test"))
	if err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Fatalf("scripts/test missing or not executable: %v", err)
	}
	script, _ := os.ReadFile(filepath.Join(root, "scripts", "test"))
	for _, want := range []string{"apt-get install -y -qq chromium", "go test -race -count=1 -timeout 30m ./..."} {
		if !strings.Contains(string(script), want) {
			t.Errorf("scripts/test does not %q", want)
		}
	}
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil || !strings.Contains(string(ci), "\n./scripts/test\n") {
		t.Errorf(".ci/run does not run the README's test command (%v)", err)
	}
}
