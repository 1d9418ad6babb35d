package configs

import (
	"encoding"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"

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

// envAliases are documented shortcuts for the default account.
var envAliases = map[string][]keySeg{
	"CHANNELS_TELEGRAM_TOKEN": {{name: "channels"}, {name: "telegram"}, {name: "accounts"}, {name: "default", mapKey: true}, {name: "token"}},
	"CHANNELS_DISCORD_TOKEN":  {{name: "channels"}, {name: "discord"}, {name: "accounts"}, {name: "default", mapKey: true}, {name: "token"}},
}

// In a key pattern (keyPatterns), anyID stands for a map key that is
// lower-cased (an id: ids are written normalised) and anyName for one kept
// as the variable writes it (the name of an environment variable or a
// header: GITHUB_TOKEN and github_token are two variables).
const (
	anyID   = "*"
	anyName = "*Aa"
)

// namedMaps are the maps whose keys are names kept as written (anyName).
var namedMaps = map[string]bool{"env": true, "envFiles": true, "headers": true, "headerFiles": true}

// keySeg is one segment of a key an environment variable sets.
type keySeg struct {
	// name is the struct key as its field names it, or the map key.
	name string
	// mapKey: name is a map key; exact: one compared with its case.
	mapKey, exact bool
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

func segsPath(segs []keySeg) string {
	names := make([]string, len(segs))
	for i, s := range segs {
		names[i] = s.name
	}
	return strings.Join(names, ".")
}

// patterns are every leaf key path of Config (keyPatterns), computed once.
var patterns = sync.OnceValue(func() [][]string {
	return keyPatterns(reflect.TypeOf(Config{}), nil, map[reflect.Type]bool{})
})

// EnvKey returns the config key (segments joined by "::", lower case but
// for map keys kept as written) that the environment variable name
// overrides, and false when it names none: Load ignores such a variable
// (and notes it), so a deployment that sets one (a renamed key) can be
// caught by a test (internal/deploytest). A name that fits several keys
// (a map key may hold '_') gives the one whose map keys take the fewest
// tokens; Load decides by the entries the file declares.
func EnvKey(name string) (string, bool) {
	fits := envFits(name)
	if len(fits) == 0 {
		return "", false
	}
	best := fits[0]
	for _, f := range fits[1:] {
		if wildTokens(f) < wildTokens(best) {
			best = f
		}
	}
	parts := make([]string, len(best))
	for i, s := range best {
		parts[i] = s.name
		if !s.exact {
			parts[i] = strings.ToLower(s.name)
		}
	}
	return strings.Join(parts, "::"), true
}

func wildTokens(f []keySeg) int {
	n := 0
	for _, s := range f {
		if s.mapKey {
			n += strings.Count(s.name, "_") + 1
		}
	}
	return n
}

// envFits are the keys a variable's name fits, in field order. PATH is
// the key's camelCase segments in SNAKE_CASE joined by '_' (stateDir ->
// STATE_DIR, baseURL -> BASE_URL); a map key takes one or more tokens
// (an account id default_bot is DEFAULT_BOT), so a name may fit several.
func envFits(name string) [][]keySeg {
	suffix, ok := strings.CutPrefix(name, EnvPrefix)
	if !ok {
		return nil
	}
	if key, ok := envAliases[suffix]; ok {
		return [][]keySeg{key}
	}
	toks := strings.Split(suffix, "_")
	var out [][]keySeg
	for _, p := range patterns() {
		out = append(out, matchEnv(p, toks)...)
	}
	return out
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

// longestFields drops the fits that read a field's name short where
// another reads it whole: where two fits first differ in a field
// (ENV_FILES_X: env then FILES_X, or envFiles then X), the longer field
// is the key (envFiles.X). A field's name is read whole before a map key.
func longestFields(fits [][]keySeg) [][]keySeg {
	if len(fits) < 2 {
		return fits
	}
	shorter := func(f, g []keySeg) bool {
		for i := 0; i < len(f) && i < len(g); i++ {
			if f[i] == g[i] {
				continue
			}
			return !f[i].mapKey && !g[i].mapKey && len(snake(f[i].name)) < len(snake(g[i].name))
		}
		return false
	}
	var out [][]keySeg
	for _, f := range fits {
		if !slices.ContainsFunc(fits, func(g []keySeg) bool { return shorter(f, g) }) {
			out = append(out, f)
		}
	}
	return out
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

// nearestEnv is the variable of a key without map entries closest to name
// (edit distance at most 3), or "".
func nearestEnv(name string) string {
	best, bestD := "", 4
	for _, p := range patterns() {
		if slices.ContainsFunc(p, func(s string) bool { return s == anyID || s == anyName }) {
			continue
		}
		var toks []string
		for _, s := range p {
			toks = append(toks, snake(s)...)
		}
		v := EnvPrefix + strings.Join(toks, "_")
		if d := editDistance(name, v); d < bestD {
			best, bestD = v, d
		}
	}
	return best
}

// keyPatterns lists every leaf key path of t; anyID or anyName stands for
// a map key. onPath breaks recursive types (messages.queue.byChannel holds
// queues).
func keyPatterns(t reflect.Type, prefix []string, onPath map[reflect.Type]bool) [][]string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Struct {
		if onPath[t] {
			return nil
		}
		onPath[t] = true
		defer delete(onPath, t)
	}
	if t.Implements(reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()) ||
		reflect.PointerTo(t).Implements(reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()) ||
		t == reflect.TypeOf(time.Duration(0)) {
		return [][]string{prefix}
	}
	switch t.Kind() {
	case reflect.Struct:
		var out [][]string
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			parts := strings.Split(f.Tag.Get("mapstructure"), ",")
			tag := parts[0]
			if tag == "-" || !f.IsExported() {
				continue
			}
			if len(parts) > 1 && parts[1] == "squash" { // its keys are the parent's
				out = append(out, keyPatterns(f.Type, prefix, onPath)...)
				continue
			}
			if tag == "" {
				tag = f.Name
			}
			out = append(out, keyPatterns(f.Type, append(append([]string{}, prefix...), tag), onPath)...)
		}
		return out
	case reflect.Map:
		key := anyID
		if len(prefix) > 0 && namedMaps[prefix[len(prefix)-1]] {
			key = anyName
		}
		return keyPatterns(t.Elem(), append(append([]string{}, prefix...), key), onPath)
	default:
		return [][]string{prefix}
	}
}

// snake turns a camelCase segment into SNAKE tokens: stateDir -> [STATE
// DIR]; a run of capitals is one word (baseURL -> [BASE URL]).
func snake(seg string) []string {
	rs := []rune(seg)
	var toks []string
	start := 0
	for i := 1; i < len(rs); i++ {
		if !unicode.IsUpper(rs[i]) {
			continue
		}
		// A capital starts a word after a small letter, or as the last
		// capital of a run followed by a small letter (URLPath).
		if !unicode.IsUpper(rs[i-1]) || (i+1 < len(rs) && !unicode.IsUpper(rs[i+1])) {
			toks = append(toks, strings.ToUpper(string(rs[start:i])))
			start = i
		}
	}
	return append(toks, strings.ToUpper(string(rs[start:])))
}

// matchEnv is every way env tokens fit a key pattern: a field takes its
// SNAKE tokens; a map key one or more tokens joined with '_' (lower-cased
// for anyID).
func matchEnv(pattern []string, toks []string) [][]keySeg {
	if len(pattern) == 0 {
		if len(toks) == 0 {
			return [][]keySeg{nil}
		}
		return nil
	}
	var out [][]keySeg
	prepend := func(s keySeg, rests [][]keySeg) {
		for _, rest := range rests {
			out = append(out, append([]keySeg{s}, rest...))
		}
	}
	switch seg := pattern[0]; seg {
	case anyID, anyName:
		for n := 1; n <= len(toks); n++ {
			key := strings.Join(toks[:n], "_")
			if seg == anyID {
				key = strings.ToLower(key)
			}
			prepend(keySeg{name: key, mapKey: true, exact: seg == anyName}, matchEnv(pattern[1:], toks[n:]))
		}
	default:
		want := snake(seg)
		if len(toks) < len(want) || !slices.Equal(toks[:len(want)], want) {
			return nil
		}
		prepend(keySeg{name: seg}, matchEnv(pattern[1:], toks[len(want):]))
	}
	return out
}
