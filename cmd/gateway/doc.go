// Command gateway is the daemon and its operator CLI (SPEC §8): flags and
// subcommands (cobra), the operator commands and their printing. `gateway
// run` (the default) loads the config and hands it to gatewayd, which
// assembles and runs the daemon (adapters, dispatcher, lanes, agent runner,
// session store, HTTP API, hot reload); the other subcommands inspect and
// repair a state directory.
package main
