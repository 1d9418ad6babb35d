package limits

import (
	"testing"
	"time"
)

// Owners are exempt under the names commands.owners accepts (package
// access reads them): a Discord mention "<@42>" and a bare id holding a
// colon (a web sender "addr-2001:db8:1:2::", an IPv6 client) name the
// sender, as they make it an owner. On main neither was exempt: the
// mention was kept as the id and the colon taken for a channel's.
func TestOwnersExemptUnderTheNamesAccessTakes(t *testing.T) {
	cfg := withDefaults(Scope{Rate: "1/min"}, Scope{}, Scope{})
	cfg.ExemptOwners = true
	owners := []string{"discord:<@42>", "<@!43>", "addr-2001:db8:1:2::"}
	r := newRig(t, cfg, owners, time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC))
	for _, s := range []Subject{
		{AgentID: "main", Channel: "discord", SenderID: "42", ChatID: "c"},
		{AgentID: "main", Channel: "telegram", SenderID: "43", ChatID: "c"},
		{AgentID: "main", Channel: "web", SenderID: "addr-2001:db8:1:2::", ChatID: "c"},
	} {
		if d := r.check(s); !d.Exempt {
			t.Errorf("owner %s:%s not exempt: %+v", s.Channel, s.SenderID, d)
		}
	}
	// The channel prefix still binds: discord:<@42> is not telegram's 42.
	if d := r.check(Subject{AgentID: "main", Channel: "telegram", SenderID: "42", ChatID: "c"}); d.Exempt {
		t.Errorf("telegram:42 exempt by discord:<@42>")
	}
}

// TestOwnerWrittenTgIsExempt: "tg:44" names Telegram's 44 as package
// access reads it (OpenClaw's short form); limits kept "tg" as a channel
// of its own, so such an owner was privileged but not exempt.
func TestOwnerWrittenTgIsExempt(t *testing.T) {
	cfg := withDefaults(Scope{Rate: "1/min"}, Scope{}, Scope{})
	cfg.ExemptOwners = true
	r := newRig(t, cfg, []string{"tg:44"}, time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC))
	if d := r.check(Subject{AgentID: "main", Channel: "telegram", SenderID: "44", ChatID: "c"}); !d.Exempt {
		t.Errorf("owner tg:44 not exempt: %+v", d)
	}
	if d := r.check(Subject{AgentID: "main", Channel: "discord", SenderID: "44", ChatID: "c"}); d.Exempt {
		t.Errorf("discord:44 exempt by tg:44")
	}
}
