package configs

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gateway/gateway/channels"
)

// EnvPrefix prefixes every environment override.
const EnvPrefix = "GATEWAY_"

// ownVars are the gateway's own GATEWAY_* variables that are not config
// keys: no notice names them.
var ownVars = map[string]bool{
	"GATEWAY_CONFIG":               true, // the CLI's --config
	"GATEWAY_PPROF_LISTEN":         true, // gatewayd's profiling listener
	"GATEWAY_SESSION_CACHE_TTL_MS": true, // the files backend's index cache
	"GATEWAY_DOCTOR_MIN_FREE_MB":   true, // gateway doctor's free-space check
}

// override is one GATEWAY_* variable and the key it sets.
type override struct {
	name, value string
	segs        []keySeg
	typ         reflect.Type
}

// path is the key as errors write it (a.b.c; map keys as set).
func (o override) path() string { return segsPath(o.segs) }

// canon is the key compared without the case decoding ignores.
func (o override) canon() string {
	parts := make([]string, len(o.segs))
	for i, s := range o.segs {
		parts[i] = s.name
		if !s.exact {
			parts[i] = strings.ToLower(s.name)
		}
	}
	return strings.Join(parts, "\x00")
}

// envOverrides resolves the GATEWAY_* variables of environ against m, the
// file's keys (resolve says how a name fitting several keys is read). Two
// variables setting one key to different values are refused. unknown are
// the GATEWAY_* variables that name no key (notices).
func envOverrides(m map[string]any, environ []string) (ovs []override, unknown []string, err error) {
	seen := map[string]bool{}
	type pending struct {
		name, value string
		fits        [][]keySeg
	}
	var ambiguous []pending
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, EnvPrefix) || seen[name] {
			continue // a name twice: the first, as getenv reads it
		}
		seen[name] = true
		switch fits := longestFields(envFits(name)); len(fits) {
		case 0:
			if !ownVars[name] {
				unknown = append(unknown, name)
			}
		case 1:
			ovs = append(ovs, newOverride(name, val, fits[0]))
		default:
			ambiguous = append(ambiguous, pending{name, val, fits})
		}
	}
	// The entries the unambiguous variables name count as declared.
	for _, o := range ovs {
		setEnvPath(m, o.segs, nil)
	}
	for _, p := range ambiguous {
		f, err := resolve(m, p.name, p.fits)
		if err != nil {
			return nil, nil, err
		}
		ovs = append(ovs, newOverride(p.name, p.value, f))
	}
	sort.SliceStable(ovs, func(i, j int) bool { return ovs[i].name < ovs[j].name })
	byKey := map[string]override{}
	for _, o := range ovs {
		if prev, ok := byKey[o.canon()]; ok && prev.value != o.value {
			return nil, nil, &Error{Env: prev.name, Key: prev.path(),
				Msg: fmt.Sprintf("%s sets it too, to another value: unset one of them", o.name)}
		}
		byKey[o.canon()] = o
	}
	sort.Strings(unknown)
	return ovs, unknown, nil
}

// resolve picks the key of a name that fits several, which differ in
// where a map key ends (CHANNELS_TELEGRAM_ACCOUNTS_DEFAULT_WEBHOOK_SECRET_TOKEN
// is the account default's webhook.secretToken, or the token of an account
// default_webhook_secret): the one whose map entries are declared, in the
// file or by a variable that fits one key. When none or several are, the
// variable is refused, naming the keys it fits: never a guess.
func resolve(m map[string]any, name string, fits [][]keySeg) ([]keySeg, error) {
	var declared [][]keySeg
	for _, f := range fits {
		if isDeclared(m, f) {
			declared = append(declared, f)
		}
	}
	if len(declared) == 1 {
		return declared[0], nil
	}
	keys := make([]string, len(fits))
	for i, f := range fits {
		keys[i] = segsPath(f)
	}
	return nil, &Error{Env: name, Msg: fmt.Sprintf("names more than one key: %s (a map key may hold \"_\"): "+
		"declare the entry it is for in the file, and only that one", strings.Join(keys, " or "))}
}

// newOverride is the variable name=value setting the key segs, with the
// key's type.
func newOverride(name, value string, segs []keySeg) override {
	names := make([]string, len(segs))
	for i, s := range segs {
		names[i] = s.name
	}
	t, _, _ := typeAt(reflect.TypeOf(Config{}), names)
	return override{name: name, value: value, segs: segs, typ: t}
}

// isDeclared reports whether m holds every map entry that key f is in
// (struct keys compared without case, as the decoder does; a name kept as
// written with it). A name the key ends in (an env var's) is set, not
// declared.
func isDeclared(m map[string]any, f []keySeg) bool {
	var node any = m
	for i, s := range f {
		if i == len(f)-1 && s.exact {
			return true
		}
		mm, _ := node.(map[string]any)
		k, ok := lookup(mm, s)
		if !ok {
			return !slices.ContainsFunc(f[i:], func(s keySeg) bool { return s.mapKey && !s.exact })
		}
		node = mm[k]
	}
	return true
}

// lookup finds s among m's keys: as typed for a name kept as written,
// else without case.
func lookup(m map[string]any, s keySeg) (string, bool) {
	if _, ok := m[s.name]; ok {
		return s.name, true
	}
	if s.exact {
		return "", false
	}
	for k := range m {
		if strings.EqualFold(k, s.name) {
			return k, true
		}
	}
	return "", false
}

// setEnvPath sets the key segs in m to v (nil: only makes the maps on the
// way), reusing the file's keys as lookup finds them.
func setEnvPath(m map[string]any, segs []keySeg, v any) {
	for i, s := range segs {
		k, ok := lookup(m, s)
		if !ok {
			k = s.name
		}
		if i == len(segs)-1 {
			if v != nil {
				m[k] = v
			} else if !ok {
				m[k] = nil
			}
			return
		}
		next, isMap := m[k].(map[string]any)
		if !isMap {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
}

// applyEnv sets each override's value in m, typed for its key.
func applyEnv(m map[string]any, ovs []override) {
	for _, o := range ovs {
		setEnvPath(m, o.segs, o.decoded())
	}
}

// decoded is the override's value as the decoder is given it: text
// verbatim (a token 007 stays 007), a list of text as the comma list the
// decoder splits, a list of other items split here with each item typed as
// YAML types it, and anything else typed as YAML would (10 → int, true →
// bool, 1s → string).
func (o override) decoded() any {
	t := derefType(o.typ)
	switch {
	case t == nil:
		return envValue(o.value)
	case takesText(t):
		return o.value
	case t.Kind() == reflect.Slice:
		if t.Elem().Kind() == reflect.String {
			return o.value
		}
		items := []any{}
		for _, it := range envItems(o.value) {
			items = append(items, envValue(it))
		}
		return items
	}
	return envValue(o.value)
}

// envItems splits a comma list of numbers or flags ("" is none).
func envItems(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	items := strings.Split(s, ",")
	for i := range items {
		items[i] = strings.TrimSpace(items[i])
	}
	return items
}

// takesText reports whether a key of type t takes a variable's value as
// text: a string key (but the thread mode, which true and false fill too)
// or one that reads itself from text (a model reference).
func takesText(t reflect.Type) bool {
	if t.Implements(textUnmarshal) || reflect.PointerTo(t).Implements(textUnmarshal) {
		return true
	}
	return t.Kind() == reflect.String && t != reflect.TypeFor[channels.Inherit]()
}

func derefType(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// envValue types an environment value as YAML would (10 → int, true →
// bool, 1s → string), so env overrides of numbers, flags and durations
// decode like the file.
func envValue(s string) any {
	var v any
	if err := yaml.Unmarshal([]byte(s), &v); err != nil || v == nil {
		return s
	}
	switch v.(type) {
	case map[string]any, []any:
		return s // structured values come as comma lists or not at all
	}
	return v
}

// checkEnv checks each override's value as checkNode checks the file's:
// the error names the variable.
func checkEnv(ovs []override) error {
	for _, o := range ovs {
		t := derefType(o.typ)
		if t == nil {
			continue
		}
		var err error
		switch {
		case takesText(t) && !t.Implements(textUnmarshal) && !reflect.PointerTo(t).Implements(textUnmarshal):
			// any text will do
		case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.String:
			err = checkEnvItems(o, t)
		default:
			err = checkNode(nil, envNode(o.value, takesText(t)), o.typ, o.path())
		}
		if err != nil {
			if e, ok := err.(*Error); ok {
				e.Env, e.Line, e.Column = o.name, 0, 0
			}
			return err
		}
	}
	return nil
}

// checkEnvItems checks a comma list's items against a list's item type.
func checkEnvItems(o override, t reflect.Type) error {
	elem := derefType(t.Elem())
	if k := elem.Kind(); k == reflect.Struct || k == reflect.Map || k == reflect.Slice {
		return &Error{Key: o.path(), Msg: "a list of entries is set in the file only, not from the environment"}
	}
	for i, it := range envItems(o.value) {
		if err := checkNode(nil, envNode(it, false), elem, fmt.Sprintf("%s[%d]", o.path(), i)); err != nil {
			return err
		}
	}
	return nil
}

// envNode is a value as a scalar node: typed as YAML types it, or text.
func envNode(val string, text bool) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: val}
	if text {
		return n
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(val), &doc); err == nil && len(doc.Content) == 1 && doc.Content[0].Kind == yaml.ScalarNode {
		return doc.Content[0]
	}
	return n
}

// unknownNotices are the notices of GATEWAY_* variables naming no key.
func unknownNotices(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		msg := fmt.Sprintf("env %s names no config key: it is ignored", n)
		if s := nearestEnv(n); s != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", s)
		} else if strings.HasPrefix(n, EnvPrefix+"AGENTS_") || strings.HasPrefix(n, EnvPrefix+"BINDINGS_") {
			msg += " (the entries of agents.list and bindings are set in the file only)"
		}
		out = append(out, msg)
	}
	return out
}

// secretWays are the suffixes of a secret's other keys: token is also
// tokenFile, apiKey also apiKeyFile and apiKeyEnv.
var secretWays = []string{"File", "Env"}

// replaceSecrets drops from m the file's keys of a secret that a variable
// gives another way (the file's token when GATEWAY_..._TOKEN_FILE is set,
// the deploy units' way of moving a secret out of the YAML; the file's
// tokenFile when GATEWAY_HTTP_TOKEN is): the environment overrides the
// file, as it does for any key. Both ways in the file, or both in the
// environment, stay for Validate to refuse. It returns the notices of the
// keys dropped.
func replaceSecrets(m map[string]any, root *yaml.Node, ovs []override) []string {
	set := map[string]bool{}
	for _, o := range ovs {
		set[o.canon()] = true
	}
	var out []string
	for _, o := range ovs {
		last := o.segs[len(o.segs)-1]
		if last.mapKey || o.value == "" { // an empty variable gives no secret
			continue
		}
		parent := o.segs[:len(o.segs)-1]
		names := make([]string, len(parent))
		for i, s := range parent {
			names[i] = s.name
		}
		pt, _, ok := typeAt(reflect.TypeOf(Config{}), names)
		if pt = derefType(pt); !ok || pt.Kind() != reflect.Struct {
			continue
		}
		base := last.name
		for _, w := range secretWays {
			base = strings.TrimSuffix(base, w)
		}
		fields := structKeys(pt)
		for _, sib := range append([]string{base}, base+secretWays[0], base+secretWays[1]) {
			if strings.EqualFold(sib, last.name) {
				continue
			}
			if _, isField := fieldType(fields, sib); !isField {
				continue
			}
			sibling := override{segs: append(append([]keySeg{}, parent...), keySeg{name: sib})}
			if set[sibling.canon()] {
				continue
			}
			pm, ok := mapAt(m, parent)
			if !ok {
				continue
			}
			k, ok := lookup(pm, keySeg{name: sib})
			if !ok || pm[k] == nil || pm[k] == "" {
				continue
			}
			delete(pm, k)
			typed, _, _ := find(root, append(names, k))
			out = append(out, fmt.Sprintf("%s: set in the file, but %s gives this secret another way: the environment's applies "+
				"(the file's %s is ignored)", typed, o.name, k))
		}
	}
	return out
}

// mapAt is the map at segs in m, if the file has one there.
func mapAt(m map[string]any, segs []keySeg) (map[string]any, bool) {
	for _, s := range segs {
		k, ok := lookup(m, s)
		if !ok {
			return nil, false
		}
		if m, ok = m[k].(map[string]any); !ok {
			return nil, false
		}
	}
	return m, true
}
