// Package archtest holds repository-wide tests: the import rules of SPEC §1
// and issue 12, checked over the transitive production import graph with a
// reason for each rule (rules_test.go), and the rule that every package has
// a doc comment. It has no code of its own.
package archtest
