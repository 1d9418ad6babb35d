package dispatch

import (
	"strings"
	"testing"

	"github.com/gateway/gateway/agents"
	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions/filestore"
)

// TestNewRequiredOptions: New names the option that is missing.
func TestNewRequiredOptions(t *testing.T) {
	dir := t.TempDir()
	mgr, err := filestore.Open(filestore.Options{StateDir: dir, CacheTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close()
	runner, err := agents.NewRunner(agents.Options{Sessions: mgr.Backend(), Providers: map[string]llm.Provider{"fake": &model{}},
		Defaults: agents.Defaults{Model: agents.Model{Primary: "fake/m"}}, Agents: []agents.Agent{{ID: "main"}}})
	if err != nil {
		t.Fatal(err)
	}
	resolver, err := routing.NewResolver(routing.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rt := &Runtime{Resolver: resolver}
	tests := []struct {
		name string
		opts Options
		want string // "" means New succeeds
	}{
		{"no sessions", Options{StateDir: dir, Runner: runner}, "Sessions and Runner are required"},
		{"no runner", Options{Sessions: mgr.Backend(), StateDir: dir}, "Sessions and Runner are required"},
		{"no state dir", Options{Sessions: mgr.Backend(), Runner: runner}, "StateDir is required"},
		{"complete", Options{Sessions: mgr.Backend(), StateDir: dir, Runner: runner}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := New(tt.opts, rt)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("New: error %v, want one containing %q", err, tt.want)
			}
			if d != nil {
				if got, want := d.media.mediaRoot(), dir+"/media"; got != want {
					t.Errorf("mediaRoot = %q, want %q", got, want)
				}
			}
		})
	}
}
