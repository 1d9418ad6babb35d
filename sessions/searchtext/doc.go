// Package searchtext is how the transcript search (issue 14, the storage
// seam's sessions.Searcher) sees text: Tokens splits a message or a query
// into words (WordList, the same without an allocation per word), and
// Snippet cuts the text shown around a hit. Every backend indexes and
// matches Tokens' words (PostgreSQL as the lexemes of its tsvector
// column) and cuts its snippets around them, so a search finds and reads
// alike on each; sessions checks with Tokens that a query has words to
// search for (SearchQuery.Normalize).
//
// It imports no other project package, so the contract can use it.
// Concurrency: the functions are pure; a WordList is not safe for
// concurrent use.
package searchtext
