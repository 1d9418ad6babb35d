package llm

import (
	"errors"
	"net/http"
)

// StatusError carries the HTTP status of a failed model call; providers
// wrap their SDK's error in it so the runner can tell a provider's trouble
// (5xx, 429, quota) from a request's fault (400) without knowing the SDKs.
// Its text is the wrapped error's.
type StatusError struct {
	Status int
	Err    error
}

func (e *StatusError) Error() string { return e.Err.Error() }

func (e *StatusError) Unwrap() error { return e.Err }

// WithStatus wraps err with status; a status of 0 (unknown) returns err.
func WithStatus(status int, err error) error {
	if status == 0 || err == nil {
		return err
	}
	return &StatusError{Status: status, Err: err}
}

// HTTPStatus returns the HTTP status carried by err, or 0 when none is (a
// connection failure, a timeout, a broken stream).
func HTTPStatus(err error) int {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Status
	}
	return 0
}

// ProviderFault reports whether err is the provider's trouble rather than
// the request's: no HTTP answer at all, 5xx, 429 (rate or quota), 402
// (credits), 401/403 (the key), 404 (model gone) or 408. A context
// overflow and other 4xx are the request's fault: another model would
// refuse it too, or it needs the conversation changed.
func ProviderFault(err error) bool {
	if err == nil || errors.Is(err, ErrContextOverflow) {
		return false
	}
	switch s := HTTPStatus(err); {
	case s == 0, s >= 500:
		return true
	case s == http.StatusTooManyRequests, s == http.StatusPaymentRequired, s == http.StatusUnauthorized,
		s == http.StatusForbidden, s == http.StatusNotFound, s == http.StatusRequestTimeout:
		return true
	}
	return false
}
