package llm

import (
	"errors"
	"fmt"
	"testing"
)

func TestProviderFault(t *testing.T) {
	base := errors.New("boom")
	tests := map[string]struct {
		err  error
		want bool
	}{
		"no status (connection)": {fmt.Errorf("openai: chat: %w", base), true},
		"500":                    {WithStatus(500, base), true},
		"503 wrapped":            {fmt.Errorf("op: %w", WithStatus(503, base)), true},
		"429":                    {WithStatus(429, base), true},
		"402 credits":            {WithStatus(402, base), true},
		"401 key":                {WithStatus(401, base), true},
		"400":                    {WithStatus(400, base), false},
		"422":                    {WithStatus(422, base), false},
		"overflow":               {fmt.Errorf("x: %w: %w", ErrContextOverflow, WithStatus(400, base)), false},
		"nil":                    {nil, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := ProviderFault(tc.err); got != tc.want {
				t.Fatalf("ProviderFault(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
	if err := WithStatus(503, base); err.Error() != "boom" || !errors.Is(err, base) || HTTPStatus(err) != 503 {
		t.Fatalf("WithStatus: %v, status %d", err, HTTPStatus(err))
	}
	if WithStatus(0, base) != base {
		t.Fatal("WithStatus(0) wrapped")
	}
}
