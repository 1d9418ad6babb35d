// Package configs holds the gateway's top-level configuration: the example
// and quick-start YAML files beside it, and the loader that reads them with
// viper (SPEC §9).
//
// Each package owns its typed config with defaults and Validate; Config is
// made of them. Decoding is strict (unknown keys are errors naming the key),
// every key has a default, GATEWAY_<PATH> environment variables override the
// file, and *File secrets are read at load. A loaded Config is immutable:
// hot reload loads a new one and swaps it whole.
package configs
