// Package pairstate is the storage contract of pairing (SPEC §6): the
// pending requests and approved senders of each channel, the State
// interface that stores them, and its files implementation (Files, one
// JSON file per channel under <stateDir>/pairing).
//
// It sits below both of its users, so neither reaches the other: package
// access keeps the pairing rules over a State and is imported by channel
// adapters, which must never reach sessions (SPEC §1); package sessions
// names State as its seam's PairingState (aliases in sessions/seam.go) and
// its backends implement it (the files backend with Files, PostgreSQL in
// sessions/pgstore). Like every internal leaf package it imports no other
// project package but internal/atomicfile.
//
// Concurrency: a State is safe for concurrent use by goroutines and by
// processes; UpdatePairing serialises the updates of one channel.
package pairstate
