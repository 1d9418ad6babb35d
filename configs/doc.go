// Package configs holds the gateway's top-level configuration: the example
// and quick-start YAML files beside it, and the loader that reads them
// (SPEC §9): the YAML parsed keeping keys as typed, GATEWAY_* environment
// overrides laid over it (env.go: how a variable's name maps onto a key),
// then decoded strictly with mapstructure. viper resolves the command
// line's settings (cmd/gateway: --config or GATEWAY_CONFIG) but holds none
// of the file's keys: it lower-cases keys, and an env var name in
// mcp.servers.*.env keeps its case (LIBNOTES: viper).
//
// Each package owns its typed config with defaults and Validate; Config is
// made of them, and so are its own sections (http.go, agents.go,
// session.go, messages.go, the channels in rooms.go), each with its
// Validate. Config.Validate calls them and itself checks only what spans
// sections: models naming providers, bindings, rooms, limits and tools
// naming agents and MCP servers, the transcriber naming a provider. A
// channel account (channels.<channel>.accounts.<id>) is one YAML map
// composed of two packages' configs side by side: the adapter's platform
// settings and the account's access rules (TelegramAccount, DiscordAccount
// in accounts.go); the adapter never sees the rules. Decoding is strict
// (unknown keys are errors naming the key),
// every key has a default, GATEWAY_<PATH> environment variables override the
// file, and *File secrets are read at load. A loaded Config is immutable:
// hot reload loads a new one and swaps it whole.
package configs
