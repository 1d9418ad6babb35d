package mcp_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gateway/gateway/agents/mcp"
)

// rawServer is an MCP server written by hand for what the SDK's own server
// never sends (a tool list or a result that breaks the rules, a log line
// on stdout): it answers initialize, tools/list with Tools (a JSON array;
// NextCursor, when set, as every page's nextCursor) and tools/call with
// Result (a CallToolResult as JSON), and method not found to everything
// else (server/discover included, so the client falls back to
// initialize).
type rawServer struct {
	Tools      string
	NextCursor string
	Result     string
}

// rawMessage is a JSON-RPC message as the raw server reads it.
type rawMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		ProtocolVersion string `json:"protocolVersion"`
	} `json:"params"`
}

// answer is the server's reply to one message, nil for a notification.
func (s rawServer) answer(line []byte) []byte {
	var m rawMessage
	if err := json.Unmarshal(line, &m); err != nil || m.ID == nil || m.Method == "" {
		return nil
	}
	var result string
	switch m.Method {
	case "initialize":
		result = fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}`, m.Params.ProtocolVersion)
	case "tools/list":
		result = `{"tools":` + s.Tools
		if s.NextCursor != "" {
			result += fmt.Sprintf(`,"nextCursor":%q`, s.NextCursor)
		}
		result += `}`
	case "tools/call":
		result = s.Result
	case "ping":
		result = `{}`
	default:
		return []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, m.ID))
	}
	return []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, m.ID, result))
}

// newRawHTTPServer serves s over Streamable HTTP (one JSON body an answer,
// no session, no event stream) until the test ends.
func newRawHTTPServer(t *testing.T, s rawServer) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		out := s.answer(body)
		if out == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Environment of the test binary run as a raw stdio server (rawStdioConfig).
const (
	envRaw       = "GATEWAY_MCP_RAW_STDIO"
	envRawTools  = "GATEWAY_MCP_RAW_TOOLS"
	envRawResult = "GATEWAY_MCP_RAW_RESULT"
	// envRawNoise is printed to stdout before the server answers anything
	// and before every answer to tools/call.
	envRawNoise = "GATEWAY_MCP_RAW_NOISE"
	// envRawSlow is how long the server takes to answer a call of the
	// tool "slow" (a duration), holding every later message meanwhile and
	// ignoring notifications/cancelled.
	envRawSlow = "GATEWAY_MCP_RAW_SLOW"
)

// serveRawStdioIfAsked runs the raw server over stdin/stdout and exits
// when the test binary was started as one (rawStdioConfig).
func serveRawStdioIfAsked() {
	if os.Getenv(envRaw) != "1" {
		return
	}
	s := rawServer{Tools: os.Getenv(envRawTools), Result: os.Getenv(envRawResult)}
	noise := os.Getenv(envRawNoise)
	if noise != "" {
		fmt.Println(noise)
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	for in.Scan() {
		out := s.answer(in.Bytes())
		if out == nil {
			continue
		}
		if noise != "" && strings.Contains(in.Text(), `"tools/call"`) {
			fmt.Println(noise)
		}
		if d, err := time.ParseDuration(os.Getenv(envRawSlow)); err == nil && strings.Contains(in.Text(), `"name":"slow"`) {
			time.Sleep(d)
		}
		fmt.Printf("%s\n", out)
	}
	os.Exit(0)
}

// rawStdioConfig runs the test binary as a raw stdio server.
func rawStdioConfig(t *testing.T, s rawServer, noise string) mcp.ServerConfig {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return mcp.ServerConfig{Command: exe, Env: map[string]string{envRaw: "1", envRawTools: s.Tools, envRawResult: s.Result, envRawNoise: noise}}
}
