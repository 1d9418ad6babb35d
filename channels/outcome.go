package channels

import "errors"

// Answered reports whether err, returned by a send, is the platform's own
// answer that the message was not posted (a refusal, a rate limit):
// sending it again cannot show it twice. Any other error (a timeout, a
// connection lost after the request was written, a server error, an
// answer that could not be read) leaves the outcome unknown: the message
// may have been posted. Adapters mark answers with Refusal or by an error
// type with an Answered() bool method.
func Answered(err error) bool {
	var a interface{ Answered() bool }
	return errors.As(err, &a) && a.Answered()
}

// Refusal marks err as the platform's answer that nothing was posted
// (Answered reports true for it and for errors that wrap it).
func Refusal(err error) error {
	if err == nil {
		return nil
	}
	return refusal{err}
}

type refusal struct{ err error }

func (r refusal) Error() string  { return r.err.Error() }
func (r refusal) Unwrap() error  { return r.err }
func (r refusal) Answered() bool { return true }

// AccountRefused reports whether err, returned by a send, is the
// platform's refusal of the bot's own credentials (a token revoked or
// rotated before the configuration caught up): an answer (Answered) that
// says nothing about the chat it was sent to. Adapters mark it with
// AccountRefusal or by an error type with an AccountRefused() bool method.
func AccountRefused(err error) bool {
	var a interface{ AccountRefused() bool }
	return errors.As(err, &a) && a.AccountRefused()
}

// AccountRefusal marks err as the platform's refusal of the bot's
// credentials (Answered and AccountRefused report true for it).
func AccountRefusal(err error) error {
	if err == nil {
		return nil
	}
	return accountRefusal{refusal{err}}
}

type accountRefusal struct{ refusal }

func (accountRefusal) AccountRefused() bool { return true }
