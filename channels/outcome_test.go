package channels

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestAnswered(t *testing.T) {
	refused := Refusal(errors.New("403 forbidden"))
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"refusal", refused, true},
		{"wrapped refusal", fmt.Errorf("send part 1: %w", refused), true},
		{"timeout", context.DeadlineExceeded, false},
		{"plain", errors.New("connection reset by peer"), false},
		{"nil", nil, false},
	} {
		if got := Answered(c.err); got != c.want {
			t.Errorf("%s: Answered(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
	if Refusal(nil) != nil {
		t.Error("Refusal(nil) is an error")
	}
	if !errors.Is(fmt.Errorf("x: %w", refused), refused) || refused.Error() != "403 forbidden" {
		t.Error("a refusal does not keep its error")
	}
}

func TestAccountRefused(t *testing.T) {
	token := AccountRefusal(errors.New("401 unauthorized"))
	for _, c := range []struct {
		name           string
		err            error
		answered, acct bool
	}{
		{"account refusal", token, true, true},
		{"wrapped account refusal", fmt.Errorf("send part 1: %w", token), true, true},
		{"room refusal", Refusal(errors.New("403 forbidden")), true, false},
		{"timeout", context.DeadlineExceeded, false, false},
	} {
		if got := Answered(c.err); got != c.answered {
			t.Errorf("%s: Answered = %v, want %v", c.name, got, c.answered)
		}
		if got := AccountRefused(c.err); got != c.acct {
			t.Errorf("%s: AccountRefused = %v, want %v", c.name, got, c.acct)
		}
	}
	if AccountRefusal(nil) != nil || token.Error() != "401 unauthorized" {
		t.Error("AccountRefusal does not keep its error")
	}
}
