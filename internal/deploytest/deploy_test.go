package deploytest

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gateway/gateway/configs"
)

// root is the repository root, seen from this package's directory.
var root = filepath.Join("..", "..")

// deployment is one Compose layout under deploy/.
type deployment struct {
	dir        string // relative to the repository root
	envExample string // the example .env beside compose.yaml, "" for none
	// made are the bind-mount sources the operator makes by the setup
	// commands of the file's header, each with what stands in for it here.
	made map[string]func(t *testing.T) string
}

var deployments = []deployment{
	{dir: "deploy", made: map[string]func(*testing.T) string{
		// mkdir -p config; cp ../configs/gateway.example.yaml config/gateway.yaml
		"config": copyTo("configs/gateway.example.yaml", "gateway.yaml"),
	}},
	{dir: "deploy/replicas", envExample: "env.example"},
}

// copyTo returns a maker of a directory holding the repository file src
// under the name dst.
func copyTo(src, dst string) func(t *testing.T) string {
	return func(t *testing.T) string {
		b, err := os.ReadFile(filepath.Join(root, src))
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, dst), b, 0o600); err != nil {
			t.Fatal(err)
		}
		return dir
	}
}

// gatewayConfig is a gateway service's config as its container loads it.
type gatewayConfig struct {
	service string
	cfg     *configs.Config
	state   string // the named volume at its stateDir
}

// TestDeployments checks every Compose layout: mounts, secrets, and the
// config of every gateway service, loaded as the container loads it.
func TestDeployments(t *testing.T) {
	for _, d := range deployments {
		t.Run(d.dir, func(t *testing.T) {
			dir := filepath.Join(root, d.dir)
			var env map[string]string
			if d.envExample != "" {
				env = readEnvFile(t, filepath.Join(dir, d.envExample))
			}
			c, raw := loadCompose(t, filepath.Join(dir, "compose.yaml"), env)
			secrets := secretFiles(t, dir, c, raw)
			mounts := map[string][]mount{}
			for name, s := range c.Services {
				mounts[name] = serviceMounts(t, dir, d, c, name, s)
			}
			gws := c.gatewayServices()
			if len(gws) == 0 {
				t.Fatal("no service runs the gateway image")
			}
			var loaded []gatewayConfig
			for _, name := range gws {
				cfg := loadGatewayConfig(t, c.Services[name], mounts[name], secrets)
				loaded = append(loaded, gatewayConfig{service: name, cfg: cfg, state: stateVolume(t, name, c.Services[name], cfg)})
			}
			checkReplicas(t, loaded)
			for name, s := range c.Services {
				if strings.HasPrefix(s.Image, "haproxy:") {
					checkHAProxy(t, hostPath(mounts[name], "/usr/local/etc/haproxy/haproxy.cfg"), s, loaded, env)
				}
			}
		})
	}
}

// secretFiles maps each top-level secret to a file on the host: the file
// itself when it is in the repository, else (a secret the operator makes,
// which must live under secrets/ and be named by a setup command in the
// header) a stand-in holding a plausible value.
func secretFiles(t *testing.T, dir string, c *composeFile, raw string) map[string]string {
	t.Helper()
	out := map[string]string{}
	tmp := t.TempDir()
	for name, s := range c.Secrets {
		rel := filepath.Clean(s.File)
		if _, err := os.Stat(filepath.Join(dir, rel)); err == nil {
			out[name] = filepath.Join(dir, rel)
			continue
		}
		if !strings.HasPrefix(rel, "secrets/") || !strings.Contains(raw, "> "+rel) {
			t.Errorf("secret %s: %s does not exist and no setup command in the header writes it (> %s)", name, s.File, rel)
			continue
		}
		value := "0123456789abcdef0123456789abcdef"
		if strings.Contains(name, "postgres_url") {
			value = "postgres://gateway:secret@postgres:5432/gateway?sslmode=disable"
		}
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(value+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		out[name] = p
	}
	return out
}

// serviceMounts checks a service's volumes and secrets and returns its
// mounts with bind sources resolved on the host (a made source replaced
// by its stand-in).
func serviceMounts(t *testing.T, dir string, d deployment, c *composeFile, name string, s service) []mount {
	t.Helper()
	for _, sec := range s.Secrets {
		if _, ok := c.Secrets[sec]; !ok {
			t.Errorf("service %s: secret %s is not defined under secrets:", name, sec)
		}
	}
	var out []mount
	for _, v := range s.Volumes {
		m := parseMount(v)
		if m.Target == "" || !strings.HasPrefix(m.Target, "/") {
			t.Errorf("service %s: volume %q has no absolute target", name, v)
			continue
		}
		if !m.Bind {
			if _, ok := c.Volumes[m.Source]; !ok {
				t.Errorf("service %s: named volume %s is not declared under volumes:", name, m.Source)
			}
			out = append(out, m)
			continue
		}
		rel := filepath.Clean(m.Source)
		if make, ok := d.made[rel]; ok {
			m.Source = make(t)
		} else {
			m.Source = filepath.Join(dir, rel)
			if _, err := os.Stat(m.Source); err != nil {
				t.Errorf("service %s: mounts %s, which does not exist: %v", name, v, err)
			}
		}
		out = append(out, m)
	}
	return out
}

// loadGatewayConfig loads a gateway service's config through
// configs.LoadBytes (what `gateway run` and `config validate` use) with the
// container's environment: the image's ENV, then the service's. Paths
// under /run/secrets/ are the secrets' host files.
func loadGatewayConfig(t *testing.T, s service, mounts []mount, secrets map[string]string) *configs.Config {
	t.Helper()
	env := imageEnv(t, filepath.Join(root, "deploy", "Dockerfile"))
	for k, v := range s.Environment {
		env[k] = v
	}
	onHost := func(v string) string {
		for _, name := range s.Secrets {
			v = strings.ReplaceAll(v, "/run/secrets/"+name, secrets[name])
		}
		return v
	}
	var environ []string
	for k, v := range env {
		if strings.HasPrefix(k, configs.EnvPrefix) && k != "GATEWAY_CONFIG" {
			if _, ok := configs.EnvKey(k); !ok {
				t.Errorf("%s names no config key: the daemon would ignore it", k)
			}
		}
		environ = append(environ, k+"="+onHost(v))
	}
	sort.Strings(environ)
	path := env["GATEWAY_CONFIG"]
	for i, a := range s.Command {
		if (a == "--config" || a == "-c") && i+1 < len(s.Command) {
			path = s.Command[i+1]
		}
	}
	if path == "" {
		t.Fatal("the gateway runs without a config file (--config or GATEWAY_CONFIG)")
	}
	file := hostPath(mounts, path)
	if file == "" {
		t.Fatalf("config %s is on no bind mount", path)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("config %s: %v", path, err)
	}
	cfg, err := configs.LoadBytes([]byte(onHost(string(data))), environ)
	if err != nil {
		t.Fatalf("config %s (%s) with the container's environment: %v", path, file, err)
	}
	return cfg
}

// stateVolume is the named volume at the service's state directory.
func stateVolume(t *testing.T, name string, s service, cfg *configs.Config) string {
	t.Helper()
	for _, v := range s.Volumes {
		if m := parseMount(v); m.Target == cfg.StateDir && !m.Bind {
			return m.Source
		}
	}
	t.Errorf("service %s: no named volume at its stateDir %s", name, cfg.StateDir)
	return ""
}

// checkReplicas: several gateway services share one PostgreSQL database,
// each allowed to (replicas: true) under an id of its own, and each with a
// state volume of its own.
func checkReplicas(t *testing.T, gws []gatewayConfig) {
	t.Helper()
	if len(gws) < 2 {
		return
	}
	ids, states := map[string]string{}, map[string]string{}
	for _, g := range gws {
		// Each its own: a daemon holds its state dir's pid lock.
		if other, dup := states[g.state]; dup {
			t.Errorf("%s and %s share the state volume %s", other, g.service, g.state)
		}
		states[g.state] = g.service
		p := g.cfg.Storage.Postgres
		if g.cfg.Storage.Backend != configs.StoragePostgres || !p.Replicas {
			t.Errorf("%s: storage %q replicas %v; several replicas need backend postgres with replicas: true", g.service, g.cfg.Storage.Backend, p.Replicas)
		}
		if p.ReplicaID == "" {
			t.Errorf("%s: no storage.postgres.replicaId", g.service)
		} else if other, dup := ids[p.ReplicaID]; dup {
			t.Errorf("%s and %s share replicaId %q", other, g.service, p.ReplicaID)
		}
		ids[p.ReplicaID] = g.service
		if g.cfg.HTTP.Token == "" {
			t.Errorf("%s: no HTTP token behind the proxy", g.service)
		}
	}
}
