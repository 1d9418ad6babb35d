package agents

import (
	"fmt"
	"strings"
)

// Model is the `model` of agents.defaults or of one agent. It is written
// either as "provider/model" (the primary alone, the older form) or as
// {primary: provider/model, fallbacks: [provider/model, ...]}.
type Model struct {
	Primary string `mapstructure:"primary"`
	// Fallbacks are tried in order when the primary's provider fails
	// (fallback.go). An agent that lists none inherits the defaults'.
	Fallbacks []string `mapstructure:"fallbacks"`
}

// UnmarshalText reads the string form: the primary alone.
func (m *Model) UnmarshalText(b []byte) error {
	m.Primary = string(b)
	m.Fallbacks = nil
	return nil
}

// String is the primary.
func (m Model) String() string { return m.Primary }

// IsZero reports whether nothing is set.
func (m Model) IsZero() bool { return m.Primary == "" && len(m.Fallbacks) == 0 }

// SplitModel splits "provider/model"; the error says what is wrong.
func SplitModel(name string) (provider, model string, err error) {
	p, m, ok := strings.Cut(name, "/")
	if !ok || p == "" || m == "" {
		return "", "", fmt.Errorf("%q is not provider/model", name)
	}
	return p, m, nil
}

// CheckModels checks that m's primary (when set) and every fallback name a
// provider that has(provider) reports configured; errors name the key
// below prefix ("agents.defaults.model.fallbacks[1]").
func CheckModels(prefix string, m Model, has func(provider string) bool) error {
	check := func(key, name string) error {
		p, _, err := SplitModel(name)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		if !has(p) {
			return fmt.Errorf("%s: provider %q is not in providers", key, p)
		}
		return nil
	}
	if m.Primary != "" {
		if err := check(prefix, m.Primary); err != nil {
			return err
		}
	}
	for i, f := range m.Fallbacks {
		if err := check(fmt.Sprintf("%s.fallbacks[%d]", prefix, i), f); err != nil {
			return err
		}
	}
	return nil
}
