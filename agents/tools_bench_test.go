package agents

import (
	"context"
	"testing"

	"go.uber.org/zap"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/routing"
	"github.com/gateway/gateway/sessions/filestore"
)

// toolsRunner is a runner whose agent "main" is offered most built-in
// tool (memory on, web_fetch allowed), and a session of it.
func toolsRunner(tb testing.TB) (*Runner, *session) {
	tb.Helper()
	mgr, err := filestore.Open(filestore.Options{StateDir: tb.TempDir(), CacheTTL: -1})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = mgr.Close() })
	a := Agent{ID: "main", Memory: MemoryConfig{Enabled: true}, Tools: Tools{Allow: []string{webFetchToolName}}}
	r, err := NewRunner(Options{Sessions: mgr.Backend(), Providers: map[string]llm.Provider{"fake": nil},
		Defaults: Defaults{Model: Model{Primary: "fake/m"}}, Agents: []Agent{a}})
	if err != nil {
		tb.Fatal(err)
	}
	return r, &session{agent: a, key: routing.Key{Agent: "main", Main: "main"}, log: zap.NewNop()}
}

// TestEveryBuiltinToolBuilds: builtinTool has a constructor for each name
// in builtinTools, and the tool it builds carries that name.
func TestEveryBuiltinToolBuilds(t *testing.T) {
	r, s := toolsRunner(t)
	for _, name := range builtinTools {
		if got := r.builtinTool(name, s).def.Name; got != name {
			t.Errorf("builtinTool(%q) built %q", name, got)
		}
	}
}

// BenchmarkRunnerTools is the cost, per model call, of building the
// tools a session is offered.
func BenchmarkRunnerTools(b *testing.B) {
	r, s := toolsRunner(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if len(r.tools(ctx, s)) == 0 {
			b.Fatal("no tools")
		}
	}
}
