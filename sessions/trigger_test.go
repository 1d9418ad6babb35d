package sessions

import "testing"

func TestMatchTrigger(t *testing.T) {
	custom := ResetConfig{ResetTriggers: []string{"/fresh", "!Reset"}}
	none := ResetConfig{ResetTriggers: []string{}}
	tests := []struct {
		name     string
		cfg      ResetConfig
		text     string
		wantTrig string
		wantRest string
		wantOK   bool
	}{
		{"whole /new", ResetConfig{}, "/new", "/new", "", true},
		{"whole /reset", ResetConfig{}, "/reset", "/reset", "", true},
		{"upper case", ResetConfig{}, "/NEW", "/new", "", true},
		{"surrounding space", ResetConfig{}, "  /reset \n", "/reset", "", true},
		{"with rest", ResetConfig{}, "/new hello there", "/new", "hello there", true},
		{"model argument", ResetConfig{}, "/new gpt-4o", "/new", "gpt-4o", true},
		{"newline separator", ResetConfig{}, "/new\nfirst line", "/new", "first line", true},
		{"rest keeps inner spacing", ResetConfig{}, "/Reset   a  b ", "/reset", "a  b", true},
		{"no separator", ResetConfig{}, "/newer", "", "", false},
		{"not a prefix", ResetConfig{}, "please /new", "", "", false},
		{"empty", ResetConfig{}, "", "", "", false},
		{"plain text", ResetConfig{}, "hello", "", "", false},
		{"custom trigger", custom, "/FRESH start", "/fresh", "start", true},
		{"custom mixed case", custom, "!reset", "!Reset", "", true},
		{"custom replaces defaults", custom, "/new", "", "", false},
		{"empty list disables", none, "/new", "", "", false},
		{"unicode after trigger", ResetConfig{}, "/newé", "", "", false},
		{"non-breaking space separator", ResetConfig{}, "/new\u00a0hello", "/new", "hello", true},
		{"tab separator", ResetConfig{}, "/reset\thello", "/reset", "hello", true},
		{"custom trigger, em space", custom, "/fresh\u2003start", "/fresh", "start", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			trig, rest, ok := MatchTrigger(tt.cfg, tt.text)
			if trig != tt.wantTrig || rest != tt.wantRest || ok != tt.wantOK {
				t.Errorf("MatchTrigger(%q) = (%q, %q, %v), want (%q, %q, %v)",
					tt.text, trig, rest, ok, tt.wantTrig, tt.wantRest, tt.wantOK)
			}
		})
	}
}
