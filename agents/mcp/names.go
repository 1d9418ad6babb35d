package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Separator joins a server's name and its tool's name in the name offered
// to models.
const Separator = "__"

// maxToolName is the longest tool name the providers accept (OpenAI:
// ^[a-zA-Z0-9_-]{1,64}$).
const maxToolName = 64

// ToolName returns the name offered to models for a server's tool:
// "<server>__<tool>", characters outside [A-Za-z0-9_-] replaced by '_',
// cut to 64 characters with 8 hex digits of the full name's hash when
// longer (so two long names stay apart).
func ToolName(server, tool string) string {
	var b strings.Builder
	b.WriteString(server)
	b.WriteString(Separator)
	for _, r := range tool {
		if r == '_' || r == '-' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := b.String()
	if len(name) <= maxToolName {
		return name
	}
	sum := sha256.Sum256([]byte(server + "\x00" + tool))
	return name[:maxToolName-9] + "_" + hex.EncodeToString(sum[:4])
}

// SplitToolName returns the server part of a name built by ToolName, and
// false for a name without the separator (a built-in tool).
func SplitToolName(name string) (server string, ok bool) {
	server, _, ok = strings.Cut(name, Separator)
	return server, ok && ValidServerName(server)
}
