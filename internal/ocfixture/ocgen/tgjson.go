package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// JSONForm wraps a Bot API handler that reads form-encoded parameters (the
// fake in telegramtest, written for the Go client) so that it also accepts
// the JSON bodies grammY posts: a JSON object body becomes the equivalent
// form, as the real Bot API treats both alike — strings as they are,
// numbers and booleans as their JSON text, objects and arrays as JSON.
func JSONForm(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if mt != "application/json" {
			next.ServeHTTP(w, r)
			return
		}
		form, err := jsonToForm(r.Body)
		if err != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]any{"ok": false, "error_code": 400,
				"description": "Bad Request: " + err.Error()})
			return
		}
		body := form.Encode()
		r2 := r.Clone(r.Context())
		r2.Body = io.NopCloser(strings.NewReader(body))
		r2.ContentLength = int64(len(body))
		r2.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		next.ServeHTTP(w, r2)
	})
}

// jsonToForm reads a JSON object of Bot API parameters as a form.
func jsonToForm(body io.Reader) (url.Values, error) {
	raw, err := io.ReadAll(body)
	if err != nil {
		return nil, fmt.Errorf("read JSON body: %w", err)
	}
	form := url.Values{}
	if len(bytes.TrimSpace(raw)) == 0 {
		return form, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var params map[string]any
	if err := dec.Decode(&params); err != nil {
		return nil, fmt.Errorf("JSON body is not an object: %w", err)
	}
	for k, v := range params {
		switch v := v.(type) {
		case nil:
			// A null parameter is an absent one.
		case string:
			form.Set(k, v)
		case json.Number:
			form.Set(k, v.String())
		case bool:
			form.Set(k, strconv.FormatBool(v))
		default:
			b, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("parameter %s: %w", k, err)
			}
			form.Set(k, string(b))
		}
	}
	return form, nil
}
