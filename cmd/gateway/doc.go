// Command gateway is the daemon and its operator CLI (SPEC §8): `gateway run`
// (the default) wires the channel adapters, dispatcher, lanes, agent runner,
// session store and HTTP API; the other subcommands inspect and repair a
// state directory.
package main
