// Package mcp is the gateway's Model Context Protocol client: it connects
// to the servers of `mcp.servers` (stdio child processes and Streamable
// HTTP endpoints, through the official SDK github.com/modelcontextprotocol/go-sdk),
// keeps their tool lists and calls their tools for the agents' tool loop.
//
// A Manager owns one supervisor goroutine per enabled server, started by
// Apply and stopped by Apply (server removed or changed) or when Run's
// context ends; Run waits for all of them. A supervisor connects, lists the
// tools (again on notifications/tools/list_changed), and when the
// connection ends (a stdio server exited or crashed, an HTTP session was
// lost) reconnects after a backoff that doubles from 1 s up to 1 min and
// starts again from 1 s once a connection has lasted a minute. The last
// known tool list stays offered while a server restarts; a call made then
// waits for the connection within its timeout.
//
// Tool names offered to models are "<server>__<tool>" (the server's name,
// two underscores, the tool's name with characters outside [A-Za-z0-9_-]
// replaced by '_', cut to 64 characters with a hash suffix when longer), the
// form OpenAI-compatible and Anthropic tool names accept; their input
// schemas are completed to an object schema with properties (inputSchema),
// and a tool whose schema is no object schema is left out. Call takes that
// name's parts and returns the result's content as transcript blocks:
// text, images as pi image blocks, everything else described in text. A
// call that times out (the server's timeout, default 60 s) or whose server
// dies during it is an error the agent turns into a tool error result.
//
// Manager methods are safe for concurrent use. No lock is held across a
// call to a server. A stdio server's input is written by a goroutine of
// its own (inputQueue), so a server that stops reading holds no caller.
// Errors name a server's URL without its query or user info (redact).
package mcp
