package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/gateway/gateway/agents/llm"
)

// APIError is an error the endpoint answered: a non-2xx status with an
// OpenAI error body, or an {"error":...} payload in the stream (Status 0).
type APIError struct {
	Status     int    // HTTP status; 0 for an error sent in the stream
	StatusText string // e.g. "400 Bad Request"
	Message    string
	Type       string
	Code       string // e.g. "context_length_exceeded"; "" when none or not a string
	Param      string // the request parameter it names, e.g. "reasoning_effort"; "" when none
}

func (e *APIError) Error() string {
	if e.Status > 0 {
		return fmt.Sprintf("error, status code: %d, status: %s, message: %s", e.Status, e.StatusText, e.Message)
	}
	return e.Message
}

// RequestError is a non-2xx answer whose body is not an OpenAI error.
type RequestError struct {
	Status     int
	StatusText string
	Body       []byte // the start of the body
}

func (e *RequestError) Error() string {
	body := e.Body
	if len(body) > maxShownBody {
		body = body[:maxShownBody]
	}
	return fmt.Sprintf("error, status code: %d, status: %s, body: %q", e.Status, e.StatusText, body)
}

// maxShownBody bounds how much of a RequestError's body its message shows.
const maxShownBody = 512

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// errorBody is the OpenAI error envelope.
type errorBody struct {
	Error *struct {
		// Message is a string, or (a schema error of some servers) a list
		// of strings joined by ", ".
		Message json.RawMessage `json:"message"`
		Type    string          `json:"type"`
		Code    any             `json:"code"`
		Param   any             `json:"param"`
	} `json:"error"`
}

// parseAPIError reads an {"error":{...}} payload; nil when data is not one.
func parseAPIError(data []byte) *APIError {
	var eb errorBody
	if err := json.Unmarshal(data, &eb); err != nil || eb.Error == nil {
		return nil
	}
	e := &APIError{Type: eb.Error.Type}
	e.Code, _ = eb.Error.Code.(string)
	e.Param, _ = eb.Error.Param.(string)
	if err := json.Unmarshal(eb.Error.Message, &e.Message); err != nil {
		var parts []string
		if json.Unmarshal(eb.Error.Message, &parts) != nil {
			return nil
		}
		e.Message = strings.Join(parts, ", ")
	}
	return e
}

// statusError reads a non-2xx answer into an *APIError or a *RequestError.
func statusError(resp *http.Response) error {
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil {
		return fmt.Errorf("error, status code: %d, reading body: %w", resp.StatusCode, err)
	}
	if e := parseAPIError(body); e != nil {
		e.Status, e.StatusText = resp.StatusCode, resp.Status
		return e
	}
	return &RequestError{Status: resp.StatusCode, StatusText: resp.Status, Body: body}
}

// wrapErr names the operation, marks context overflows and carries the
// HTTP status for the retry and failover layers.
func wrapErr(op string, err error) error {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		if apiErr.Status == http.StatusBadRequest || apiErr.Status == http.StatusRequestEntityTooLarge || apiErr.Status == 0 {
			if apiErr.Code == "context_length_exceeded" || llm.IsContextOverflowText(apiErr.Message) {
				return fmt.Errorf("openai: %s: %w: %w", op, llm.ErrContextOverflow, err)
			}
		}
	}
	var reqErr *RequestError
	if errors.As(err, &reqErr) && reqErr.Status == http.StatusBadRequest && llm.IsContextOverflowText(string(reqErr.Body)) {
		return fmt.Errorf("openai: %s: %w: %w", op, llm.ErrContextOverflow, err)
	}
	switch {
	case apiErr != nil:
		err = llm.WithStatus(apiErr.Status, err)
	case reqErr != nil:
		err = llm.WithStatus(reqErr.Status, err)
	}
	return fmt.Errorf("openai: %s: %w", op, err)
}
