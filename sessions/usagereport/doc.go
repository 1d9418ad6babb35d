// Package usagereport answers usage questions from the usage ledger, the
// storage seam's sessions.UsageLog (issue 14), and refills that ledger: it
// is built on the seam, above it, and knows no backend.
//
//   - Query (report.go) asks a ledger for its buckets and sums them into a
//     Report, what `gateway usage --json` and GET /api/usage print; Total
//     sums buckets (the chat's /usage command).
//   - ParseSince (since.go) reads a report's start as operators write it.
//   - Rebuild (rebuild.go) adds to a backend's ledger the turns its
//     transcripts hold and the ledger lacks (`gateway usage rebuild`).
//
// The ledger's own rules — what a row is, which filters a backend answers,
// the order of buckets — are the contract's (sessions.UsageRow,
// sessions.CheckUsageFilter, sessions.SortUsage): every backend applies
// them, and none imports this package.
//
// Concurrency: the functions hold no state; they are as safe for
// concurrent use as the ledger and backend they are given.
package usagereport
