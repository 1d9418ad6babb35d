// Package archtest holds repository-wide tests: the import rules of SPEC §1
// and the rule that every package has a doc comment. It has no code of its
// own.
package archtest
