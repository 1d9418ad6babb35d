package main

import (
	"testing"

	"github.com/gateway/gateway/configs"
)

// TestMediaRuntimeFollowsConfig: per-account caps and the text cap come
// from the config; the transcriber exists only with media.audio; a
// mediaMaxMb edit is applied by hot reload (not named as needing a restart).
func TestMediaRuntimeFollowsConfig(t *testing.T) {
	load := func(y string) *configs.Config {
		t.Helper()
		c, err := configs.LoadBytes([]byte("stateDir: /tmp/x\n"+y), nil)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	base := load("channels: {telegram: {accounts: {default: {token: '1:a'}, big: {token: '2:b', mediaMaxMb: 50}}}}\n")
	m, err := mediaRuntime(base, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.MaxBytes("telegram", "default"); got != 20<<20 {
		t.Errorf("default account cap %d", got)
	}
	if got := m.MaxBytes("telegram", "big"); got != 50<<20 {
		t.Errorf("big account cap %d", got)
	}
	if m.MaxTextBytes != 32<<10 || m.Transcribe != nil {
		t.Errorf("text cap %d, transcriber set %v", m.MaxTextBytes, m.Transcribe != nil)
	}
	next := load("channels: {telegram: {accounts: {default: {token: '1:a', mediaMaxMb: 5}, big: {token: '2:b', mediaMaxMb: 50}}}}\n" +
		"providers: {local: {type: echo}, oa: {type: openai, baseURL: 'http://127.0.0.1:1/v1'}}\n" +
		"media: {maxTextKb: 8, audio: {provider: oa}}\n")
	m, err = mediaRuntime(next, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.MaxBytes("telegram", "default") != 5<<20 || m.MaxTextBytes != 8<<10 || m.Transcribe == nil {
		t.Errorf("after the edit: cap %d, text cap %d, transcriber %v", m.MaxBytes("telegram", "default"), m.MaxTextBytes, m.Transcribe != nil)
	}
	for _, k := range restartOnly(base, next) {
		if k != "providers" {
			t.Errorf("%s named as needing a restart", k)
		}
	}
}
