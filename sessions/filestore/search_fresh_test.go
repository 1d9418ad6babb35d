package filestore

import (
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gateway/gateway/routing"
)

// TestFreshStateDirBuildsSearchIndexWithoutWarning: a fresh state dir has
// no search index yet; its first message builds one without a warning (a
// warning there made every new install look broken). A damaged manifest
// still warns.
func TestFreshStateDirBuildsSearchIndexWithoutWarning(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	m, err := Open(Options{StateDir: t.TempDir(), Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	k, err := routing.PeerKey("main", "telegram", "", routing.Direct, "42")
	if err != nil {
		t.Fatal(err)
	}
	sayTo(t, m, k, "first message")
	wantFound(t, m, "first", "first message")
	for _, e := range logs.All() {
		t.Errorf("warning on a fresh state dir: %s %v", e.Message, e.ContextMap())
	}
}
