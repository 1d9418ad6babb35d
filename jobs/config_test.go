package jobs

import (
	"strings"
	"testing"
	"time"
)

// TestConfigLease: jobs.lease defaults to the scheduler's one minute; 0
// means that default, values between MinLease and MaxLease are taken,
// others are refused with an error naming the key.
func TestConfigLease(t *testing.T) {
	if got := Default().Lease; got != DefaultLease || DefaultLease != time.Minute {
		t.Fatalf("default lease %s (DefaultLease %s), want 1m", got, DefaultLease)
	}
	tests := []struct {
		lease time.Duration
		err   string
	}{
		{0, ""},
		{MinLease, ""},
		{2 * time.Minute, ""},
		{MaxLease, ""},
		{time.Second, "jobs.lease: 1s is not between 5s and 1h0m0s"},
		{-time.Minute, "jobs.lease: -1m0s"},
		{2 * time.Hour, "jobs.lease: 2h0m0s"},
	}
	for _, tt := range tests {
		c := Default()
		c.Lease = tt.lease
		err := c.Validate()
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("lease %s: Validate = %v, want %q", tt.lease, err, tt.err)
		}
	}
}
