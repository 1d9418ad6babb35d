package configs

import (
	"encoding"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
)

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
		if d := editDistance(strings.ToUpper(name), v); d < bestD { // GATEWAY_http_listen: names are upper case
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
