package configs

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestTreeRedactsKeysAndPasswordsOfMCPServers: the console's config view
// (GET /api/config, `config print`) hides an MCP server's credentials
// named as such tools name them (AWS_SECRET_ACCESS_KEY, OPENAI_KEY,
// DB_PASS, a Cookie header), not only *token, *password, *api_key;
// session.mainKey, which is no secret, stays shown.
func TestTreeRedactsKeysAndPasswordsOfMCPServers(t *testing.T) {
	c, err := LoadBytes([]byte(`
session: {mainKey: lobby}
mcp:
  servers:
    s3:
      command: mcp-s3
      env: {AWS_ACCESS_KEY_ID: AKIAEXAMPLE, AWS_SECRET_ACCESS_KEY: wJalrXUtnFEMI-secret-1, OPENAI_KEY: sk-secret-2,
            DB_PASS: secret-3, GOOGLE_CREDENTIALS: secret-4, LOG_LEVEL: info}
    web:
      url: https://mcp.example.com/mcp
      headers: {Cookie: "session=secret-5", X-Private-Key: secret-6, X-Client: gateway}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(Tree(c))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"wJalrXUtnFEMI-secret-1", "sk-secret-2", "secret-3", "secret-4", "secret-5", "secret-6"} {
		if strings.Contains(string(out), secret) {
			t.Errorf("printed config shows %q:\n%s", secret, out)
		}
	}
	for _, shown := range []string{"lobby", "info", "gateway"} {
		if !strings.Contains(string(out), shown) {
			t.Errorf("printed config hides %q, no secret:\n%s", shown, out)
		}
	}
}
