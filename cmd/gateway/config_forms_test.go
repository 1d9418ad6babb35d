package main

import (
	"strings"
	"testing"

	"github.com/gateway/gateway/configs"
)

// TestOneValidationPathRefusesWhatRunRefuses: what `run` cannot start with
// is refused by the loader that `config validate` and hot reload use too,
// with the key as typed and its position.
func TestOneValidationPathRefusesWhatRunRefuses(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"reserve tokens beyond the window", "agents: {defaults: {compaction: {reserveTokens: 300000}}}", "reserveTokens"},
		{"negative pruneAfter", "session: {maintenance: {pruneAfter: -1h}}", "pruneAfter"},
		{"negative tokens", "agents: {defaults: {compaction: {keepRecentTokens: -5}}}", "keepRecentTokens"},
		{"port out of range", "http: {listen: '127.0.0.1:99999'}", "http.listen"},
		{"bool for an hour", "session: {reset: {mode: daily, atHour: true}}", "atHour"},
		{"number for a list", "session: {resetTriggers: 5}", "resetTriggers"},
		{"unknown key with an empty map", "sesion: {}", `line 2 column 1: sesion: unknown key (did you mean "session"?)`},
		{"misspelled key keeps its case", "session: {dmScop: main}", `session.dmScop: unknown key (did you mean "dmScope"?)`},
		{"deep nesting", "deep: " + strings.Repeat("[", 3000) + strings.Repeat("]", 3000), "nesting deeper than 64"},
		{"deep maps", "deep: " + strings.Repeat("{a: ", 3000) + "1" + strings.Repeat("}", 3000), "nesting deeper than 64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := configs.LoadBytes([]byte("stateDir: /tmp/x\n"+tt.yaml+"\n"), nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}
