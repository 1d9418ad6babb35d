package configs

import (
	"encoding"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"time"
	"unicode"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"

	"github.com/gateway/gateway/internal/secret"
)

// EnvPrefix prefixes every environment override.
const EnvPrefix = "GATEWAY_"

// Load reads the YAML file at path (empty: defaults only), applies
// GATEWAY_* environment overrides, decodes strictly over the defaults,
// reads *File secrets and validates. Errors name the offending key.
func Load(path string) (*Config, error) {
	var data []byte
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err) // names the path and the operation
		}
		data = b
	}
	return load(path, data, os.Environ())
}

// ErrEmpty is under LoadSaved's error for a file with no settings.
var ErrEmpty = errors.New("config: the file holds no settings")

// LoadSaved is Load for a file that may be read while it is being saved,
// as a hot reload reads it: a file holding no YAML document (empty, or
// only comments) is refused instead of loaded as the defaults. A save
// that truncates before it writes (a shell redirect whose command is
// still producing the config, an editor writing in place) leaves the file
// so for as long as the writer takes; its defaults would replace the
// running config (every channel account gone, so nobody admitted). At
// start an empty file still means the defaults (Load); the error wraps
// ErrEmpty, so that a daemon running those can tell the file unchanged.
func LoadSaved(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err) // names the path and the operation
	}
	if noDocument(data) {
		return nil, &Error{File: path, Msg: "the file is empty (no settings, at most comments): " +
			"a save still being written, or a file emptied by mistake; the running config stays", cause: ErrEmpty}
	}
	return load(path, data, os.Environ())
}

// LoadBytes is Load over YAML bytes and an explicit environment. The file
// is parsed keeping keys as typed and empty maps (allow-list entries such as
// `groups: {"-100123": {}}`); unknown keys are reported with their line,
// column and the nearest valid key; values must have the key's type (a
// number may fill a text field: ids are often written as numbers).
// `config validate`, `run` and hot reload all load through here (Load).
// Every error it returns is an *Error; its position names no file.
func LoadBytes(data []byte, environ []string) (*Config, error) {
	return load("", data, environ)
}

// load is LoadBytes for the file named file (in errors).
func load(file string, data []byte, environ []string) (*Config, error) {
	m, root, err := parseYAML(data)
	if err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			ce.File = file
			return nil, ce
		}
		return nil, &Error{File: file, Msg: strings.TrimPrefix(err.Error(), "config: ")}
	}
	src := &source{file: file, root: root, env: map[string]string{}}
	if err := checkTree(root); err != nil {
		return nil, src.locate(err)
	}
	v := viper.NewWithOptions(viper.KeyDelimiter("::"))
	values := map[string]string{}
	applyEnv(v, environ, src.env, values)
	if err := checkEnv(src.env, values); err != nil {
		return nil, src.locate(err)
	}
	mergeEnv(m, v.AllSettings(), nil)
	cfg := Default()
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		Result:      cfg,
		ErrorUnused: true,
		DecodeHook: mapstructure.ComposeDecodeHookFunc(
			numberToString,
			boolToInherit,
			mapstructure.StringToTimeDurationHookFunc(),
			mapstructure.StringToSliceHookFunc(","),
			mapstructure.TextUnmarshallerHookFunc(),
		),
	})
	if err != nil {
		return nil, fmt.Errorf("config: decoder: %w", err)
	}
	if err := dec.Decode(m); err != nil {
		return nil, src.decodeError(err)
	}
	if err := cfg.readSecrets(); err != nil {
		return nil, src.locate(err)
	}
	cfg.StateDir = expandHome(cfg.StateDir)
	if err := cfg.Validate(); err != nil {
		return nil, src.locate(err)
	}
	cfg.envShadowed = src.shadowed()
	return cfg, nil
}

// shadowed are the notices of the keys both the file and the environment
// set, in key order: the environment's value applies.
func (s *source) shadowed() []string {
	var out []string
	for _, path := range sortedKeys(s.env) {
		if typed, _, ok := find(s.root, strings.Split(path, ".")); ok {
			out = append(out, fmt.Sprintf("%s: set in the file and by %s: the environment's value applies "+
				"(editing the file changes nothing; unset the variable to let the file decide)", typed, s.env[path]))
		}
	}
	return out
}

// mergeEnv lays the environment overrides (viper's settings, string
// leaves) over the file's map, typing each value as YAML would.
func mergeEnv(m map[string]any, env map[string]any, path []string) {
	for k, v := range env {
		p := append(append([]string{}, path...), k)
		switch x := v.(type) {
		case map[string]any:
			mergeEnv(m, x, p)
		case string:
			setPath(m, p, envValue(x))
		default:
			setPath(m, p, x)
		}
	}
}

func (c *Config) readSecrets() error {
	if c.HTTP.TokenFile != "" && c.HTTP.Token == "" {
		t, err := secret.ReadFile(c.HTTP.TokenFile)
		if err != nil {
			return fmt.Errorf("config: http.tokenFile: %w", err)
		}
		c.HTTP.Token = t
	}
	if err := c.Storage.Postgres.readSecret(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := c.MCP.CheckSecrets(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return home + p[1:]
		}
	}
	return p
}

// envAliases are documented shortcuts for the default account.
var envAliases = map[string]string{
	"CHANNELS_TELEGRAM_TOKEN": "channels::telegram::accounts::default::token",
	"CHANNELS_DISCORD_TOKEN":  "channels::discord::accounts::default::token",
}

// applyEnv maps GATEWAY_<PATH> variables onto config keys. PATH is the key's
// camelCase segments in SNAKE_CASE joined by '_' (stateDir -> STATE_DIR,
// channels.telegram.accounts.default.token -> CHANNELS_TELEGRAM_ACCOUNTS_DEFAULT_TOKEN).
// set records which variable set each key (lower case, "." between
// segments) for errors, values its value.
func applyEnv(v *viper.Viper, environ []string, set, values map[string]string) {
	patterns := keyPatterns(reflect.TypeOf(Config{}), nil, map[reflect.Type]bool{})
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if key, ok := envKey(patterns, name); ok {
			v.Set(key, val)
			path := strings.ToLower(strings.ReplaceAll(key, "::", "."))
			set[path], values[path] = name, val
		}
	}
}

// EnvKey returns the config key (segments joined by "::") that the
// environment variable name overrides, and false when it names none: Load
// ignores such a variable, so a deployment that sets one (a renamed key)
// can be caught by a test (internal/deploytest).
func EnvKey(name string) (string, bool) {
	return envKey(keyPatterns(reflect.TypeOf(Config{}), nil, map[reflect.Type]bool{}), name)
}

func envKey(patterns [][]string, name string) (string, bool) {
	suffix, ok := strings.CutPrefix(name, EnvPrefix)
	if !ok {
		return "", false
	}
	if key, ok := envAliases[suffix]; ok {
		return key, true
	}
	// A map key may hold '_' (an account id), so one name can fit several
	// keys: ..._DEFAULT_WEBHOOK_SECRET_TOKEN is the account "default"'s
	// webhook.secretToken, or the token of an account named
	// "default_webhook_secret". The fit whose map keys take the fewest
	// tokens wins (then the first in field order).
	best, bestWild, found := "", 0, false
	for _, p := range patterns {
		if key, wild, ok := matchEnv(p, strings.Split(suffix, "_")); ok && (!found || wild < bestWild) {
			best, bestWild, found = key, wild, true
		}
	}
	return best, found
}

// keyPatterns lists every leaf key path of t; "*" stands for a map key.
// onPath breaks recursive types (messages.queue.byChannel holds queues).
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
		return keyPatterns(t.Elem(), append(append([]string{}, prefix...), "*"), onPath)
	default:
		return [][]string{prefix}
	}
}

// snake turns a camelCase segment into SNAKE tokens: stateDir -> [STATE DIR].
func snake(seg string) []string {
	var toks []string
	var cur strings.Builder
	for i, r := range seg {
		if unicode.IsUpper(r) && i > 0 {
			toks = append(toks, cur.String())
			cur.Reset()
		}
		cur.WriteRune(unicode.ToUpper(r))
	}
	return append(toks, cur.String())
}

// matchEnv matches env tokens against a key pattern; a "*" segment takes one
// or more tokens (lower-cased, joined with '_') as the map key. wild is how
// many tokens the "*" segments took (the fewest that fit).
func matchEnv(pattern []string, toks []string) (key string, wild int, ok bool) {
	if len(pattern) == 0 {
		return "", 0, len(toks) == 0
	}
	seg := pattern[0]
	if seg == "*" {
		for n := 1; n < len(toks); n++ {
			rest, w, ok := matchEnv(pattern[1:], toks[n:])
			if ok {
				key := strings.ToLower(strings.Join(toks[:n], "_"))
				return joinKey(key, rest), w + n, true
			}
		}
		return "", 0, false
	}
	want := snake(seg)
	if len(toks) < len(want) {
		return "", 0, false
	}
	for i, w := range want {
		if toks[i] != w {
			return "", 0, false
		}
	}
	rest, w, ok := matchEnv(pattern[1:], toks[len(want):])
	if !ok {
		return "", 0, false
	}
	return joinKey(strings.ToLower(seg), rest), w, true
}

func joinKey(a, b string) string {
	if b == "" {
		return a
	}
	return a + "::" + b
}
