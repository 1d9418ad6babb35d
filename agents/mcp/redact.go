package mcp

import (
	"net/url"
	"strings"
)

// redactedError is an error whose text has a server URL's secrets hidden;
// it unwraps to the error it hides them in.
type redactedError struct {
	err  error
	text string
}

func (e *redactedError) Error() string { return e.text }
func (e *redactedError) Unwrap() error { return e.err }

// redact returns err with the secrets the server's URL may carry — its
// query (?api_key=…) and its user info (https://token@host/) — replaced by
// "…" in its text: the network errors quote the URL, and those errors
// reach the model (a tool error result, kept in the transcript), the
// status API and the logs. A secret in the URL's path cannot be told from
// the path and stays (headerFiles keep a secret out of the URL).
func (c ServerConfig) redact(err error) error {
	if err == nil || c.URL == "" {
		return err
	}
	u, perr := url.Parse(c.URL)
	if perr != nil || (u.RawQuery == "" && u.User == nil) {
		return err
	}
	var pairs []string
	if u.RawQuery != "" {
		pairs = append(pairs, "?"+u.RawQuery, "?…")
	}
	if u.User != nil {
		// As written, and as net/http quotes it (the password as ***).
		pairs = append(pairs, u.User.String()+"@", "…@")
		if _, ok := u.User.Password(); ok {
			pairs = append(pairs, url.User(u.User.Username()).String()+":***@", "…@")
		}
	}
	text := strings.NewReplacer(pairs...).Replace(err.Error())
	if text == err.Error() {
		return err
	}
	return &redactedError{err: err, text: text}
}
