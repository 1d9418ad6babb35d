package agents

import "errors"

// UserError is an error whose UserMessage may be shown in a chat: it holds
// no provider error text, key or token. Error includes the cause for logs.
type UserError struct {
	Msg string
	Err error
}

func (e *UserError) Error() string {
	if e.Err == nil {
		return "agents: " + e.Msg
	}
	return "agents: " + e.Msg + ": " + e.Err.Error()
}

func (e *UserError) Unwrap() error { return e.Err }

// UserMessage is the chat-safe text.
func (e *UserError) UserMessage() string { return e.Msg }

func userErr(msg string, err error) error { return &UserError{Msg: msg, Err: err} }

// UserMessage returns the chat-safe text of err: its UserError message, or
// a generic apology.
func UserMessage(err error) string {
	var ue *UserError
	if errors.As(err, &ue) {
		return ue.Msg
	}
	return "Sorry, something went wrong while answering. Please try again."
}
